"""Kernel-held limits on what a submission's sandbox may hold: host memory and tasks.

Why: a submission that takes most of the host's memory or forks without end hurts every
grade beside it (the OOM killer picks among all processes; fork fails host-wide), and memory
pressure can page the expert's libraries out between its calls, slowing the expert the
submission is measured against. Under a limit the kernel stops the sandbox at its own
budget: the OOM killer acts inside its cgroup only, and fork fails inside it only. The
budget is published on the task card (``Profile.host_memory_gib``, ``Profile.max_tasks``).

Where, in order of preference per controller:

- cgroup v1 (hybrid hierarchies): each sandbox gets a directory of its own in the grader's
  own memory and pids cgroups, entered by its launcher before its first instruction.
- cgroup v2: the limit is written into the sandbox's own v2 cgroup (grader/cgroup.py). The
  kernel enables a controller for a cgroup's children only while that cgroup holds no
  process (outside the hierarchy's root), and the grader's own cgroup holds the grader, so
  :func:`_v2_controllers` first moves every process of that cgroup into a leaf child
  (``cgroup.LEAF``), as a container's init does to delegate, then enables the controllers
  its parent grants. The processes keep every limit they had (the leaf has none of its
  own).
- tasks without a pids controller: ``RLIMIT_NPROC``, which the kernel holds per uid, so only
  where the sandbox runs as a uid of its own without capabilities (``own-uid``); the
  sandbox sets it on itself before its kernel file loads (``sandbox/confine.py``), and no
  process of that uid can raise it.

Where none applies the sandbox runs without the limit and its ``isolation`` lacks
``memory-limit`` / ``tasks-limit``. The sandbox cannot lift them: it cannot write cgroup
files (Landlock, or a uid of its own), nor raise a hard rlimit (no capability).

Runs only in the grader.
"""

from __future__ import annotations

import functools
import itertools
import os
import shutil
import signal
import time
from pathlib import Path

from pytest_nodus.grader import cgroup

MEMORY_LIMIT, TASKS_LIMIT = "memory-limit", "tasks-limit"  # isolation entries
_LIMIT_FILES = {"memory": "memory.limit_in_bytes", "pids": "pids.max"}
_V2_LIMIT_FILES = {"memory": "memory.max", "pids": "pids.max"}
_LABELS = {"memory": MEMORY_LIMIT, "pids": TASKS_LIMIT}
_counter = itertools.count()


@functools.cache
def _homes() -> dict[str, Path]:
    """The grader's own cgroup v1 directory per controller ("memory", "pids") where it can
    create a child and set that child's limit."""
    mounts = {}
    try:
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            fields = line.split()
            if "-" in fields and fields[fields.index("-") + 1] == "cgroup":
                options = fields[-1].split(",")
                for controller in _LIMIT_FILES:
                    if controller in options:
                        mounts[controller] = Path(fields[4])
        own = {}
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            for controller in controllers.split(","):
                own[controller] = path
    except (OSError, ValueError):
        return {}
    homes = {}
    for controller, mount in mounts.items():
        if controller not in own:
            continue
        home = mount / own[controller].lstrip("/")
        probe = home / f"nodus-probe-{os.getpid()}"
        try:
            probe.mkdir(exist_ok=True)
            usable = (probe / _LIMIT_FILES[controller]).exists() and (probe / "cgroup.procs").exists()
            probe.rmdir()
        except OSError:
            continue
        if usable:
            _sweep(home)
            homes[controller] = home
    return homes


@functools.cache
def _v2_controllers() -> frozenset[str]:
    """The limit controllers ("memory", "pids") enabled for the children of the grader's v2
    cgroup, enabling those its parent grants: once per grader process."""
    home = cgroup.home()
    if home is None:
        return frozenset()
    granted = set(_read(home / "cgroup.controllers").split()) & set(_V2_LIMIT_FILES)
    for _ in range(5):  # a process forked into the cgroup meanwhile makes the kernel refuse
        missing = granted - set(_read(home / "cgroup.subtree_control").split())
        if not missing:
            break
        # The hierarchy's root (no cgroup.type) may hold processes and enable controllers.
        if _read(home / "cgroup.type") and not _empty_into_leaf(home):
            break
        try:
            _write(home / "cgroup.subtree_control", " ".join(f"+{c}" for c in sorted(missing)))
        except OSError:
            time.sleep(0.01)
    return frozenset(set(_read(home / "cgroup.subtree_control").split()) & granted)


def _empty_into_leaf(home: Path) -> bool:
    """Move every process of ``home`` into its leaf child; True once ``home`` holds none."""
    leaf = home / cgroup.LEAF
    try:
        leaf.mkdir(exist_ok=True)
    except OSError:
        return False
    for _ in range(20):
        pids = _read(home / "cgroup.procs").split()
        if not pids:
            return True
        for pid in pids:
            try:
                _write(leaf / "cgroup.procs", pid)
            except OSError:
                pass  # gone meanwhile, or a kernel thread: the next look says
    return not _read(home / "cgroup.procs").split()


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _write(path: Path, text: str) -> None:
    path.write_text(text)


def _kill_all(directory: Path) -> None:
    """SIGKILL every process in a v1 cgroup (v1 has no cgroup.kill). A process that forks
    meanwhile is caught by the next pass."""
    for _ in range(3):
        try:
            pids = [int(p) for p in (directory / "cgroup.procs").read_text().split()]
        except (OSError, ValueError):
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.005)


def _remove(directory: Path, wait_s: float) -> None:
    _kill_all(directory)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            directory.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            if time.monotonic() > deadline:
                return  # a process stuck in the GPU driver: the next grader's sweep removes it
            time.sleep(0.005)


def _sweep(home: Path) -> None:
    """Remove the limit cgroups of graders that are gone (killed before they cleaned up)."""
    for stale in home.glob("nodus-*-*"):
        owner = stale.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            _remove(stale, wait_s=0.2)


class SandboxLimits:
    """One sandbox's limits: v1 memory and pids cgroups of its own (entered by its launcher),
    limits written into its v2 cgroup, and a task limit it sets on itself (RLIMIT_NPROC).
    Made and entered at the sandbox's spawn; the values are written by :meth:`hold` at its
    launch, before the first message that names its kernel file."""

    def __init__(self, made: dict[str, Path], v2: Path | None):
        self.made, self.v2 = made, v2  # v1 directories entered at the spawn; the v2 cgroup
        self.directories: dict[str, Path] = {}  # the v1 ones whose limit holds
        self.v2_held: frozenset[str] = frozenset()
        self.memory_bytes, self.tasks = 0, 0
        self.rlimit_tasks = False  # set once the sandbox says its RLIMIT_NPROC holds

    @classmethod
    def create(cls, role: str, own_cgroup: cgroup.SandboxCgroup | None = None) -> SandboxLimits:
        """``own_cgroup``: the sandbox's v2 cgroup, made and not yet entered."""
        name = f"nodus-{os.getpid()}-{next(_counter)}-{role.replace(':', '_')}"
        made = {}
        for controller, home in (_homes().items() if shutil.which("sh") else ()):
            directory = home / name
            try:
                directory.mkdir()
            except OSError:
                continue
            made[controller] = directory
        return cls(made, own_cgroup.path if own_cgroup else None)

    def hold(self, memory_bytes: int, tasks: int) -> None:
        """Write the limits. A controller whose file refuses the value is not held (and not
        listed); its directory stays, unlimited, until :meth:`remove`."""
        values = {"memory": memory_bytes, "pids": tasks}
        self.memory_bytes, self.tasks = memory_bytes, tasks
        for controller, directory in self.made.items():
            try:
                (directory / _LIMIT_FILES[controller]).write_text(str(values[controller]))
            except OSError:
                continue
            self.directories[controller] = directory
        held = set()
        if self.v2 is not None:
            for controller in _v2_controllers() - set(self.directories):
                try:
                    (self.v2 / _V2_LIMIT_FILES[controller]).write_text(str(values[controller]))
                except OSError:
                    continue
                held.add(controller)
            if "memory" in held:
                # No swap to spill into past the limit; the OOM killer ends the whole sandbox.
                for setting, value in (("memory.swap.max", "0"), ("memory.oom.group", "1")):
                    try:
                        (self.v2 / setting).write_text(value)
                    except OSError:
                        pass  # no swap accounting on this kernel: nothing to spill into either
        self.v2_held = frozenset(held)

    @property
    def tasks_by_cgroup(self) -> bool:
        return "pids" in self.directories or "pids" in self.v2_held

    @property
    def labels(self) -> list[str]:
        held = set(self.directories) | set(self.v2_held) | ({"pids"} if self.rlimit_tasks else set())
        return [_LABELS[c] for c in sorted(held)]

    def enter(self) -> list[str]:
        """A command prefix per v1 cgroup that moves itself in, then execs the rest (the v2
        cgroup's own prefix enters the limits written there)."""
        prefix = []
        for directory in self.made.values():
            prefix += [shutil.which("sh"), "-c", 'echo 0 > "$0/cgroup.procs" && exec "$@"', str(directory)]
        return prefix

    def breached(self) -> str | None:
        """What the kernel stopped, said for a sandbox that died: the OOM killer acting in its
        memory cgroup, or a fork refused at its task limit."""
        found = []
        memory = self.directories.get("memory")
        oom = _counter_in(memory / "memory.oom_control", "oom_kill") if memory is not None else 0
        if "memory" in self.v2_held:
            oom += _counter_in(self.v2 / "memory.events", "oom_kill")
        if oom > 0:
            found.append(f"the kernel killed it at its host memory limit ({self.memory_bytes / 2**30:g} GiB)")
        pids = self.directories.get("pids")
        refused = _counter_in(pids / "pids.events", "max") if pids is not None else 0
        if "pids" in self.v2_held:
            refused += _counter_in(self.v2 / "pids.events", "max")
        if refused > 0:
            found.append(f"it reached its task limit ({self.tasks} processes and threads)")
        return "; ".join(found) or None

    def remove(self, wait_s: float = 2.0) -> None:
        """The v1 cgroups; the v2 one goes with the sandbox's own cgroup."""
        for directory in self.made.values():
            _remove(directory, wait_s)
        self.made, self.directories = {}, {}


def _counter_in(path: Path, key: str) -> int:
    for line in _read(path).splitlines():
        name, _, value = line.partition(" ")
        if name == key:
            return int(value) if value.strip().isdigit() else 0
    return 0
