"""What the grader's bytecode cache (grader/bytecode.py) holds, and how a file gets there.

The sources: every installed file of pytest-nodus's dependencies and of theirs (the
distributions' own file lists, not a walk of site-packages, which may hold anything), the
standard library less its tests and GUI, and the grader's package itself. Never a file of the
project's checkout beyond that package: the environments' suites, the experts and the hidden
sizes stay out of a directory every sandbox reads.

Runs in the grader's helper process (and its workers) only.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import py_compile
import re
import sys
import sysconfig
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]  # pytest_nodus/
PROJECT = "pytest-nodus"
# Parts of the standard library no grade imports: its own tests, Tk, the demos, the installers.
STDLIB_SKIPPED = {"test", "tests", "idlelib", "tkinter", "turtledemo", "lib2to3", "ensurepip",
                  "site-packages", "dist-packages", "__pycache__"}
# What a grade's processes import as they start: the grading process's, a sandbox's spawn, a
# trusted sandbox's preload on a GPU (grader/standby.py). The helper imports them to find the
# packages they bring in; nothing of theirs runs beyond their imports.
IMPORTED = ("numpy", "torch", "triton", "pytest", "xdist", "hypothesis", "torch._dynamo", "torch._inductor.compile_fx")
_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_HEADER = 16  # magic, flags, source mtime, source size (PEP 552)


def _requirements(dist_requires: list[str], extras: tuple[str, ...] = ()) -> list[str]:
    """Names of what a distribution requires: its plain requirements and those of ``extras``."""
    names = []
    for line in dist_requires or []:
        requirement, _, marker = line.partition(";")
        wanted = re.search(r"extra\s*==\s*['\"]([^'\"]+)['\"]", marker)
        if wanted and wanted.group(1) not in extras:
            continue
        match = _NAME.match(requirement)
        if match:
            names.append(match.group(1))
    return names


def _declared(extras: tuple[str, ...]) -> list[str]:
    """pytest-nodus's own requirements: from its installed metadata, else from the checkout's
    pyproject.toml (a checkout run from PYTHONPATH, as on the GPU machine)."""
    try:
        return _requirements(importlib.metadata.distribution(PROJECT).requires, extras)
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        import tomllib
    except ImportError:  # Python 3.10: no cache without the project's metadata
        return []
    try:
        project = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]
    except (OSError, KeyError, ValueError):
        return []
    lines = list(project.get("dependencies", []))
    for extra in extras:
        lines += project.get("optional-dependencies", {}).get(extra, [])
    return _requirements(lines)


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()  # PEP 503


def distributions(extras: tuple[str, ...], imported: tuple[str, ...] = ()) -> list[importlib.metadata.Distribution]:
    """The installed closure of pytest-nodus's requirements (with ``extras``), with it, and
    the distributions of every top-level package that importing ``imported`` brings in:
    some are imported without being declared (torch imports certifi)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    waiting = [PROJECT, *_declared(extras)]
    if imported:
        for name in imported:
            try:
                importlib.import_module(name)
            except ImportError:
                pass  # an extra's package not installed here
        owners = importlib.metadata.packages_distributions()
        waiting += sorted({d for top in {m.split(".")[0] for m in list(sys.modules)} for d in owners.get(top, ())})
    while waiting:
        name = waiting.pop()
        normal = _normal(name)
        if normal in found:
            continue
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not installed here (a platform's, an absent extra's, a checkout run from its folder)
        found[normal] = dist
        if normal != PROJECT:  # the project's own extras are chosen, not followed
            waiting += _requirements(dist.requires)
    return [found[n] for n in sorted(found)]


def _outside_checkout(path: str) -> bool:
    """Not a file of the project's checkout (its suites, experts, hidden sizes, tests), unless
    of the grader's package: a checkout's root holds a pyproject.toml; an installed package's
    folder (site-packages) does not."""
    root = PACKAGE.parent
    if not (root / "pyproject.toml").is_file() or not path.startswith(f"{root}/"):
        return True
    return path.startswith(f"{PACKAGE}/")


def sources(extras: tuple[str, ...], imported: tuple[str, ...] = IMPORTED) -> list[str]:
    """Every source file the cache holds bytecode of, absolute, sorted."""
    files = set()
    # Every copy of the project's own metadata: a checkout run from its folder finds its
    # egg-info there first, whose files stay out, and the installed one's (an editable
    # install's finder, imported at every interpreter's start) lies in site-packages.
    own = [d for d in importlib.metadata.distributions() if _normal(d.metadata["Name"] or "") == PROJECT]
    for dist in [*distributions(extras, imported), *own]:
        for entry in dist.files or ():
            if entry.suffix == ".py" and "__pycache__" not in entry.parts:
                path = Path(dist.locate_file(entry)).resolve()
                if path.is_file():
                    files.add(str(path))
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    for root, dirs, names in os.walk(stdlib):
        dirs[:] = [d for d in dirs if d not in STDLIB_SKIPPED]
        files.update(os.path.join(root, n) for n in names if n.endswith(".py"))
    for root, dirs, names in os.walk(PACKAGE):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files.update(os.path.join(root, n) for n in names if n.endswith(".py"))
    return sorted(f for f in files if _outside_checkout(f))


def current(pyc: str, source: os.stat_result) -> bool:
    """Whether ``pyc`` is a timestamp pyc of this interpreter for ``source`` as it is now."""
    try:
        with open(pyc, "rb") as f:
            header = f.read(_HEADER)
    except OSError:
        return False
    return (len(header) == _HEADER and header[:4] == importlib.util.MAGIC_NUMBER
            and int.from_bytes(header[4:8], "little") == 0
            and int.from_bytes(header[8:12], "little") == int(source.st_mtime) & 0xFFFFFFFF
            and int.from_bytes(header[12:16], "little") == source.st_size & 0xFFFFFFFF)


def _write(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
    temporary = f"{path}.{os.getpid()}"
    with open(temporary, "wb") as f:
        f.write(data)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


def _one(where: str, source: str) -> bool:
    """Bring ``source``'s bytecode into ``where``: kept if current, copied from beside the
    source if that is current, else compiled. Whether a current file is there now."""
    try:
        info = os.stat(source)
    except OSError:
        return False
    target = _target(where, source)
    if current(target, info):
        return True
    beside = _target(None, source)
    if current(beside, info):
        with open(beside, "rb") as f:
            _write(target, f.read())
        return True
    try:
        py_compile.compile(source, cfile=target, doraise=True, invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
    except (py_compile.PyCompileError, OSError, ValueError):
        return False  # a file Python itself would not import (a template, a syntax of another version)
    os.chmod(target, 0o644)
    return True


def _target(where: str | None, source: str) -> str:
    """Where Python looks for ``source``'s bytecode under ``PYTHONPYCACHEPREFIX=where``, or
    with none (``where`` None): beside it, in its ``__pycache__``."""
    saved = sys.pycache_prefix
    sys.pycache_prefix = where
    try:
        return importlib.util.cache_from_source(source)
    finally:
        sys.pycache_prefix = saved


def _chunk(where: str, chunk: list[str]) -> int:
    return sum(_one(where, s) for s in chunk)


def compile_into(where: Path, files: list[str], workers: int | None = None) -> int:
    """Bring every file's bytecode into ``where``, across ``workers`` processes (default:
    half the CPUs, the grades beside it keep the rest). How many are there now."""
    workers = workers or max(1, (os.cpu_count() or 2) // 2)
    chunks = [files[i::workers * 8] for i in range(workers * 8)]
    if workers == 1:
        return sum(_chunk(str(where), c) for c in chunks)
    with ProcessPoolExecutor(workers) as pool:
        return sum(pool.map(_chunk, [str(where)] * len(chunks), chunks))


def prune(where: Path, sources: list[str]) -> int:
    """Remove from ``where`` every file that is not the bytecode of one of ``sources`` (a
    module an upgrade removed, a checkout deleted), and the folders left empty: the cache
    holds today's installation, no more. How many files went."""
    keep = {_target(str(where), s) for s in sources}
    removed = 0
    for root, dirs, names in os.walk(where, topdown=False):
        for name in names:
            path = os.path.join(root, name)
            # The top holds the folder's own files (its marker, lock, owner); below it, a
            # file no source maps to is stale, or a write a killed helper left half done.
            if root != str(where) and path not in keep:
                os.unlink(path)
                removed += 1
        if root != str(where):
            try:
                os.rmdir(root)  # only if empty
            except OSError:
                pass
    return removed
