"""The grader's own bytecode cache: the libraries every grading process and sandbox imports,
compiled once per host by the grader, read by all, written by no sandbox.

Each grading process and each sandbox imports torch, Triton and numpy, a trusted sandbox
torch.compile's modules too, and each compiles from source whatever has no bytecode beside
it: on a host whose image ships torch without bytecode (the GPU machine's), seconds of every
process's start (docs/results/throughput.md).
A sandbox never writes bytecode itself (``PYTHONDONTWRITEBYTECODE``, grader/sandbox_env.py):
code a sandbox wrote where a later grade imports from would run in that grade's processes,
the expert's among them.

So the grader compiles it: a helper process of its own (``python -m
pytest_nodus.grader.bytecode``, started by :func:`refresh`, never a sandbox, never a process
that loaded a kernel file) writes the bytecode of the installed sources of pytest-nodus's
dependencies, with theirs, and of the standard library into a directory of the grader's uid,
copying what lies beside a source where it is current and compiling the rest. Python's
import reads it through ``PYTHONPYCACHEPREFIX`` and checks each file against its source's
modification time and size, as it does beside the source.

Walls: a submission's writes are confined to its scratch by Landlock (sandbox/confine.py)
and, under a root grader, it runs as a uid that owns nothing here; the cache is offered
(:func:`offered`) only where Landlock holds, and only once a helper finished it, since a
prefix Python finds empty it compiles past even where bytecode lies beside the source. It
holds the bytecode of files a sandbox reads anyway (the interpreter's library,
site-packages, the grader's package); where an environment keeps a package out, the
sandbox's confinement keeps its cached bytecode out too (sandbox/confine.py), since Python
imports cached bytecode after only a look at the source's size and time.

Runs in the grader (its grading process, the helper); a sandbox only reads the directory.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import stat
import subprocess
import sys
import sysconfig
from pathlib import Path

from pytest_nodus.grader import bytecode_files
from pytest_nodus.grader.options import user_cache

MARKER = "complete.json"  # written last, by the helper that filled the directory
LOCK = "filling.lock"
OWNER = "interpreter"  # the sys.prefix a folder is for, written first: a folder whose prefix is gone is removed
# The project's own extras that a grade imports: the cuDNN experts' frontend. Not ray, test
# or plot: no grading process or sandbox imports them.
GRADE_EXTRAS = ("gpu",)


def directory() -> Path:
    """Where this interpreter's cache lies: the user's cache where another uid can reach it
    (a submission's sandbox may run as one), else a folder of this uid's under /var/tmp. One
    folder per installation (``sys.prefix``: each virtualenv its own), so two never take
    turns refilling one."""
    tag = f"{sys.implementation.cache_tag}-{hashlib.sha256(sys.prefix.encode()).hexdigest()[:12]}"
    preferred = user_cache() / "bytecode" / tag
    if _others_can_reach(preferred):
        return preferred
    return Path("/var/tmp") / f"pytest-nodus-{os.getuid()}" / "bytecode" / tag


def _others_can_reach(path: Path) -> bool:
    """Whether every existing folder above ``path`` lets other uids pass (o+x)."""
    for parent in [path, *path.parents]:
        try:
            mode = parent.stat().st_mode
        except OSError:
            continue  # not made yet: made 0755 below an existing folder
        if not mode & stat.S_IXOTH:
            return False
    return True


def _ours_alone(path: Path) -> bool:
    """Whether ``path`` and every folder of it up to /var/tmp or the user's cache is this
    uid's (or root's) and writable by no other uid: a folder another user made first, in a
    shared /var/tmp, is never used."""
    for parent in [path, *path.parents]:
        try:
            info = parent.lstat()
        except OSError:
            return False
        if stat.S_ISLNK(info.st_mode) or info.st_uid not in (os.getuid(), 0):
            return False
        if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH) and not info.st_mode & stat.S_ISVTX:
            return False
        if info.st_mode & stat.S_ISVTX:
            return True  # a sticky /var/tmp or /tmp: no other uid can rename what lies in it
        if parent == user_cache():
            return True
    return True


@functools.cache
def key() -> str:
    """What the cache was filled for: this interpreter, every distribution it holds bytecode
    of with their versions, and the grader's package's folder. An upgrade or another checkout
    changes it, and the cache is refilled."""
    names = sorted(f"{d.metadata['Name']}=={d.version}" for d in bytecode_files.distributions(GRADE_EXTRAS))
    text = json.dumps([sys.version, sysconfig.get_paths()["stdlib"], names, str(bytecode_files.PACKAGE)])
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def complete(where: Path | None = None) -> bool:
    """Whether a helper filled ``where`` for today's installation."""
    where = where or directory()
    try:
        return json.loads((where / MARKER).read_text()).get("key") == key()
    except (OSError, ValueError):
        return False


def offered() -> Path | None:
    """The cache the grader's processes and sandboxes import from, or None: where Landlock
    cannot keep a submission from writing it, or while it is not complete. Asked at each
    spawn, not kept: a long-lived process takes the cache once a helper finished it."""
    from pytest_nodus.sandbox import landlock

    where = directory()
    if landlock.abi_version() < 1 or not where.is_dir() or not _ours_alone(where) or not complete(where):
        return None
    return where


def process_environ() -> dict[str, str]:
    """The environment of a grading process the grader starts (the API's, the warm one):
    its own, reading the cache where one is offered and writing no bytecode of its own
    there (a grading process imports the environments' suites, which no sandbox reads)."""
    where = offered()
    if where is None:
        return dict(os.environ)
    return {**os.environ, "PYTHONPYCACHEPREFIX": str(where), "PYTHONDONTWRITEBYTECODE": "1"}


def write_none_into() -> None:
    """A grading process that reads the cache (``PYTHONPYCACHEPREFIX`` pointing at it, set by
    whoever started it) writes no bytecode there: its imports of the environments' suites
    and the checkout would land where every sandbox reads."""
    if sys.pycache_prefix and Path(sys.pycache_prefix).resolve() == directory().resolve():
        sys.dont_write_bytecode = True


def refresh() -> None:
    """Start the helper that fills the cache, unless it is complete (and no removed
    installation's folder waits to go), being filled, or cannot be made safely. Detached and
    niced: it outlives the grade that asked and yields the CPU to the grades beside it."""
    where = directory()
    if complete(where) and not _orphans(where.parent):
        return
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o755)
    except OSError:
        return
    if not _ours_alone(where) or _filling(where):
        return
    try:
        subprocess.Popen([sys.executable, "-m", "pytest_nodus.grader.bytecode", str(where)],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True, env={**os.environ, "PYTHONPATH": _import_root()})
    except OSError:
        pass  # a host that cannot start it grades on without the cache: never a grade's failure


def _import_root() -> str:
    return str(Path(__file__).resolve().parents[2])


def _filling(where: Path) -> bool:
    """Whether a helper holds the lock now."""
    import fcntl

    try:
        with open(where / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return False
    except OSError:
        return True


def fill(where: Path, workers: int | None = None) -> int:
    """Write the cache (the helper's work): returns how many files it holds. Holds the lock
    throughout; the marker goes last, so a reader never takes a half-filled cache."""
    import fcntl

    where.mkdir(parents=True, exist_ok=True, mode=0o755)
    with open(where / LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        (where / OWNER).write_text(sys.prefix)
        sources = bytecode_files.sources(GRADE_EXTRAS)
        written = bytecode_files.compile_into(where, sources, workers)
        bytecode_files.prune(where, sources)  # what an upgrade or a removed checkout left
        (where / f".{MARKER}.{os.getpid()}").write_text(json.dumps({"key": key(), "files": written}))
        os.replace(where / f".{MARKER}.{os.getpid()}", where / MARKER)
    _remove_orphans(where.parent)
    return written


def _remove_orphans(folders: Path) -> None:
    """Remove the folders of installations that no longer exist (a test's or a job's
    virtualenv, removed after it graded): each holds a copy of its libraries' bytecode."""
    import shutil

    for folder in _orphans(folders):
        if _ours_alone(folder) and not _filling(folder):
            shutil.rmtree(folder, ignore_errors=True)


def _orphans(folders: Path) -> list[Path]:
    """The folders whose installation (``sys.prefix``) is gone."""
    found = []
    try:
        entries = list(folders.iterdir())
    except OSError:
        return []
    for folder in entries:
        try:
            prefix = (folder / OWNER).read_text()
        except OSError:
            continue
        if not os.path.exists(prefix):
            found.append(folder)
    return found


def main() -> None:
    """``python -m pytest_nodus.grader.bytecode [DIR]``: fill the cache now (a host's set-up),
    at DIR or where the grader looks for it; ``--where``: print where that is."""
    if sys.argv[1:] == ["--where"]:
        print(directory())
        return
    os.nice(19)  # a grade's processes come first
    os.umask(0o022)  # folders every sandbox's uid can pass, whatever the grade's umask was
    where = Path(sys.argv[1]) if len(sys.argv) > 1 else directory()
    print(f"{fill(where)} files at {where}")


if __name__ == "__main__":
    main()
