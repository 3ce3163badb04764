"""Confine the sandbox with Landlock: the kernel, not Python, decides what it may touch.

A submission runs as the same user as the grader, so plain file permissions would let it
read ``sealed_fixtures/``, ``expert/`` and the report path. Landlock (Linux >= 5.13, no
privileges needed) lets the sandbox process drop, irrevocably and for all its children:

- reading anything outside the Python installation, system directories and its own
  scratch directory (so no hidden sizes, expert code, solutions or grader source beyond
  the harness it already imported);
- writing anywhere but its scratch directory and a few device files;
- ptrace and /proc/<pid>/mem access to processes outside the sandbox (always);
- signals to, and abstract unix sockets of, processes outside it (ABI >= 6);
- TCP bind/connect (ABI >= 4).

This runs inside the sandbox, after the harness has imported what it needs and before the
submission is imported. Pure ctypes: no dependency beyond libc.
"""

from __future__ import annotations

import ctypes
import os
import platform

_SYSCALLS = {"x86_64": (444, 445, 446), "aarch64": (444, 445, 446)}

_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38

EXECUTE = 1 << 0
WRITE_FILE = 1 << 1
READ_FILE = 1 << 2
READ_DIR = 1 << 3
_DIR_WRITE = sum(1 << b for b in range(4, 13))  # remove/make of every node type
REFER = 1 << 13
TRUNCATE = 1 << 14
IOCTL_DEV = 1 << 15

_NET_BIND_TCP = 1 << 0
_NET_CONNECT_TCP = 1 << 1
_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
_SCOPE_SIGNAL = 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def abi_version() -> int:
    """Landlock ABI of the running kernel, 0 when unavailable."""
    numbers = _SYSCALLS.get(platform.machine())
    if numbers is None:
        return 0
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    version = libc.syscall(ctypes.c_long(numbers[0]), None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _handled_fs(abi: int) -> int:
    access = EXECUTE | WRITE_FILE | READ_FILE | READ_DIR | _DIR_WRITE
    if abi >= 2:
        access |= REFER
    if abi >= 3:
        access |= TRUNCATE
    if abi >= 5:
        access |= IOCTL_DEV
    return access


def find_libraries(prefixes) -> list[str]:
    """Every file whose name starts with one of ``prefixes`` in the places a shared library
    is loaded from: the directories of the libraries this process has mapped, the pip
    ``nvidia`` wheels' lib directories, the loader cache's and the system's library
    directories. Real paths (a symlink's target is what Landlock checks)."""
    import glob
    import site
    import subprocess

    if not prefixes:
        return []
    dirs = set()
    try:
        with open("/proc/self/maps") as maps:
            dirs.update(os.path.dirname(line.split()[-1]) for line in maps if line.rstrip().split()[-1].startswith("/"))
    except OSError:
        pass
    dirs.update(package_library_dirs(packages=site.getsitepackages()))
    try:
        cache = subprocess.run(["ldconfig", "-p"], capture_output=True, text=True, timeout=10).stdout
        dirs.update(os.path.dirname(line.split(" => ")[-1]) for line in cache.splitlines() if " => " in line)
    except (OSError, subprocess.SubprocessError):
        pass
    dirs.update(["/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib", "/lib/x86_64-linux-gnu",
                 "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu", "/usr/lib/aarch64-linux-gnu"])
    dirs.update(glob.glob("/usr/local/cuda*/lib*"))
    found = set()
    for directory in dirs:
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        found.update(os.path.realpath(os.path.join(directory, n)) for n in names if n.startswith(tuple(prefixes)))
    return sorted(found)


# Where other Python installations keep their packages (``<base>/python3*/*-packages``):
# system Pythons and venvs under /opt (the H200 image's /opt/torch/.venv).
PYTHON_BASES = ("/usr/lib", "/usr/local/lib", "/opt/*/lib", "/opt/*/*/lib")


def installed_site_packages(bases=PYTHON_BASES) -> list[str]:
    """The package directories of every Python installation under ``bases``; hidden
    directories count."""
    import glob

    return [p for base in bases for p in glob.glob(os.path.join(base, "python3*", "*-packages"), include_hidden=True)]


def package_library_dirs(bases=PYTHON_BASES, packages=()) -> set[str]:
    """Library directories (``torch/lib``, ``nvidia/*/lib``, ...) of ``packages`` (site-
    packages directories) and of every Python installation under ``bases``: a second
    Python's copy of a library is as loadable as the one this process mapped.
    ``/opt/torch/.venv/lib`` (the H200 image's layout) is matched: hidden directories count."""
    import glob

    found = set()
    for directory in [*packages, *installed_site_packages(bases)]:
        found.update(glob.glob(os.path.join(directory, "*", "lib"), include_hidden=True))
        found.update(glob.glob(os.path.join(directory, "nvidia", "*", "lib"), include_hidden=True))
    return found


def find_packages(names, bases=PYTHON_BASES) -> list[str]:
    """The installed files of the top-level Python modules ``names`` (a package's directory, a
    module's ``name.py`` or extension ``name.cpython-*.so``) wherever this process or another
    Python installation under ``bases`` would import them from. Real paths; [] for a module
    installed nowhere."""
    import glob
    import importlib.util
    import site
    import sys

    if not names:
        return []
    places = {os.path.realpath(p) for p in sys.path if p and os.path.isdir(p)}
    places.update(site.getsitepackages())
    places.update(installed_site_packages(bases))
    found = set()
    for name in names:
        for place in places:
            found.update(glob.glob(os.path.join(glob.escape(place), name)))
            found.update(glob.glob(os.path.join(glob.escape(place), name + ".*")))
        try:
            spec = importlib.util.find_spec(name)  # a top-level name: found, not imported
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            found.update(spec.submodule_search_locations or [])
            if spec.origin and os.path.isabs(spec.origin):
                found.add(spec.origin)
    return sorted(os.path.realpath(p) for p in found)


def carve(roots, unreadable) -> tuple[list[str], list[str]]:
    """``roots`` with the ``unreadable`` files cut out. Landlock can only grant, so a root
    that holds one of them is replaced by its entries, level by level down to the file.
    Returns (trees granted in full, directories split on the way): the split ones stay
    listable (a listing names files, it does not open them; Python's importer lists
    site-packages and finds nothing in a directory it may not list). Symlinked entries
    are left out: a rule on one would grant its target, wherever that is (a target inside
    a granted tree stays readable through that tree)."""
    unreadable = {os.path.realpath(p) for p in unreadable}
    granted, split, pending = set(), set(), [os.path.realpath(r) for r in roots if os.path.exists(r)]
    while pending:
        root = pending.pop()
        if root in unreadable:
            continue
        prefix = root.rstrip("/") + "/"
        if not any(u.startswith(prefix) for u in unreadable) or not os.path.isdir(root):
            granted.add(root)
            continue
        split.add(root)
        try:
            pending.extend(e.path for e in os.scandir(root) if not e.is_symlink())
        except OSError:
            continue
    return sorted(granted), sorted(split)


def restrict(read_paths, write_paths, device_files, unreadable=()) -> int:
    """Apply the rules to this process and its future children. Returns the ABI used.

    ``read_paths``: trees readable and executable. ``write_paths``: trees fully writable.
    ``device_files``: single files (e.g. /dev/nvidia0) readable, writable, ioctl-able.
    ``unreadable``: files inside ``read_paths`` that stay unreadable (:func:`carve`).
    Raises OSError if the kernel refuses; returns 0 (nothing applied) without Landlock.
    """
    abi = abi_version()
    if abi == 0:
        return 0
    create, add_rule, restrict_self = _SYSCALLS[platform.machine()]
    libc = _libc()
    libc.syscall.restype = ctypes.c_long
    handled = _handled_fs(abi)
    attr = _RulesetAttr(handled, 0, 0)
    size = 8
    if abi >= 4:
        attr.handled_access_net = _NET_BIND_TCP | _NET_CONNECT_TCP  # no rules: all TCP denied
        size = 16
    if abi >= 6:
        attr.scoped = _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL
        size = 24
    ruleset = libc.syscall(ctypes.c_long(create), ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if ruleset < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset failed")
    file_rights = EXECUTE | WRITE_FILE | READ_FILE | (TRUNCATE if abi >= 3 else 0)
    try:
        def allow(path: str, access: int) -> None:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                return  # a path that does not exist needs no rule
            try:
                if not os.path.isdir(path):
                    access &= file_rights | (IOCTL_DEV if abi >= 5 else 0)
                rule = _PathBeneathAttr(access & handled, fd)
                if libc.syscall(ctypes.c_long(add_rule), ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) < 0:
                    raise OSError(ctypes.get_errno(), f"landlock_add_rule failed for {path}")
            finally:
                os.close(fd)

        granted, listable = carve(read_paths, unreadable) if unreadable else (read_paths, [])
        for path in granted:
            allow(path, EXECUTE | READ_FILE | READ_DIR)
        for path in listable:
            allow(path, READ_DIR)
        for path in write_paths:
            allow(path, handled)
        for path in device_files:
            allow(path, READ_FILE | WRITE_FILE | IOCTL_DEV)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS) failed")
        if libc.syscall(ctypes.c_long(restrict_self), ctypes.c_int(ruleset), ctypes.c_uint32(0)) < 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self failed")
    finally:
        os.close(ruleset)
    return abi
