"""The sandbox's confinement: which trees it may read and write, set once, for good.

Applied after the harness has imported everything it needs and the kernels an environment
removes are gone, and before the kernel file is imported (``sandbox/__main__.py``). The
rules themselves are the kernel's (:mod:`.landlock`); this module says what they cover:
read the Python installation and system trees, less the libraries and package files the
environment keeps out; read and write its own scratch directory, no other one; no TCP, no signals out;
then the system calls no kernel needs (:mod:`.seccomp`).
"""

from __future__ import annotations

import os
import resource
import site
import sys
import sysconfig

import torch

from pytest_nodus.sandbox import landlock, seccomp

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # pytest_nodus/
PROJECT_ROOT = os.path.dirname(_PACKAGE)  # a checkout's root: expert/ and sealed_fixtures/ live there


def confine(scratch: str, device: torch.device, unreadable_libraries=(),
            unreadable_paths=()) -> tuple[str, list[str], bool]:
    """Returns the isolation level, what the sandbox may read (trees and device files), and
    whether the seccomp filter is installed."""
    # Not /dev: /dev/shm holds the other sandboxes' scratch (their kernel files, arenas), and
    # a sandbox reads only its own. The device files it needs are named one by one below.
    read = {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/run",
            sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)), _PACKAGE}
    if sys.pycache_prefix:
        read.add(sys.pycache_prefix)  # the grader's bytecode cache: its imports after confinement read it too
    read.update(site.getsitepackages())
    read.update(p for p in sysconfig.get_paths().values() if p)
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        read.add(site.getusersitepackages())
    for module in (torch, sys.modules.get("triton"), sys.modules.get("numpy")):
        if module is not None and getattr(module, "__file__", None):
            read.add(os.path.dirname(os.path.dirname(os.path.realpath(module.__file__))))
    devices = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"]
    if device.type == "cuda":
        # The GPU's device files only; not /dev/nvidia-caps (MIG administration).
        devices += [os.path.join("/dev", n) for n in os.listdir("/dev")
                    if n.startswith("nvidia") and not os.path.isdir(os.path.join("/dev", n))]
    unreadable = landlock.find_libraries(unreadable_libraries) + list(unreadable_paths)
    abi = landlock.restrict(sorted(read), [scratch], devices, unreadable + _bytecode_of(unreadable))
    # The device files are readable too: the escape tripwire must not take an open of
    # /dev/null (Triton's compiler runs with one) for a look outside.
    filtered = seccomp.install()
    return (f"landlock-abi{abi}" if abi else "process"), sorted(read | {scratch} | set(devices)), filtered


def _bytecode_of(unreadable: list[str]) -> list[str]:
    """The compiled copies of the Python files kept out: Python imports a module from its
    bytecode after only a look at the source's size and time, which Landlock does not refuse.
    A package's ``__pycache__`` lies inside it; a single-file module's lies beside it in
    its folder's ``__pycache__``, and the grader's bytecode cache (``sys.pycache_prefix``)
    mirrors both. Every optimisation level and interpreter tag."""
    import glob

    found = []
    for path in map(os.path.realpath, unreadable):
        folder, name = os.path.split(path)
        if os.path.isdir(path) and sys.pycache_prefix:
            found.append(sys.pycache_prefix + path)
        elif name.endswith(".py"):
            stem = glob.escape(name[:-3])
            found += glob.glob(os.path.join(glob.escape(folder), "__pycache__", f"{stem}.*.pyc"))
            if sys.pycache_prefix:
                found += glob.glob(os.path.join(glob.escape(sys.pycache_prefix + folder), f"{stem}.*.pyc"))
    return [f for f in found if os.path.exists(f)]


def limit_tasks(tasks: int) -> int | None:
    """Hold this process and all it starts to ``tasks`` tasks (processes and threads) of its
    uid: ``RLIMIT_NPROC``, soft and hard, which no process without ``CAP_SYS_RESOURCE`` can
    raise. The grader asks for it only where this uid is the sandbox's own and no pids cgroup
    holds the sandbox (grader/cgroup_limits.py). The limit set, or None."""
    if tasks <= 0:
        return None
    try:
        resource.setrlimit(resource.RLIMIT_NPROC, (tasks, tasks))
    except (OSError, ValueError):
        return None
    return tasks if os.getuid() != 0 else None  # the kernel does not hold root to it


def forget_project_root() -> None:
    """The project root is unreadable once confined; drop it from the import path too, so
    imports from it (the expert, the sealed sizes) fail at once and plainly."""
    sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != PROJECT_ROOT]
    sys.path_importer_cache.clear()
