"""Kernel-held limits on what a submission's sandbox may hold: host memory and tasks.

Why: a submission that takes most of the host's memory or forks without end hurts every
grade beside it (the OOM killer picks among all processes; fork fails host-wide), and memory
pressure can page the expert's libraries out between its calls, slowing the expert the
submission is measured against. Under a limit the kernel stops the sandbox at its own
budget: the OOM killer acts inside its cgroup only, and fork fails inside it only. The
budget is published on the task card (``Profile.host_memory_gib``, ``Profile.max_tasks``).

Where: the memory and pids controllers of cgroup v1, on hosts that mount them (hybrid
hierarchies): each submission's sandbox gets a directory of its own in the grader's own
memory and pids cgroups, entered by its launcher before its first instruction, as the v2
cgroup of grader/cgroup.py is. Under cgroup v2 the controllers can only be enabled below a
cgroup that holds no process, and the grader's own cgroup holds the grader: v2 limits need
a delegated subtree, which is not built. Where neither is writable the sandbox runs without
them and its ``isolation`` lacks ``memory-limit`` / ``tasks-limit``. The sandbox cannot
lift them: it cannot write cgroup files (Landlock, or a uid of its own).

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

MEMORY_LIMIT, TASKS_LIMIT = "memory-limit", "tasks-limit"  # isolation entries
_LIMIT_FILES = {"memory": "memory.limit_in_bytes", "pids": "pids.max"}
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
    """One sandbox's memory and pids cgroups, made with their limits, entered by its launcher."""

    def __init__(self, directories: dict[str, Path], memory_bytes: int, tasks: int):
        self.directories = directories
        self.memory_bytes, self.tasks = memory_bytes, tasks

    @classmethod
    def create(cls, role: str, memory_bytes: int, tasks: int) -> SandboxLimits | None:
        if shutil.which("sh") is None:
            return None
        values = {"memory": memory_bytes, "pids": tasks}
        name = f"nodus-{os.getpid()}-{next(_counter)}-{role.replace(':', '_')}"
        made = {}
        for controller, home in _homes().items():
            directory = home / name
            try:
                directory.mkdir()
                (directory / _LIMIT_FILES[controller]).write_text(str(values[controller]))
            except OSError:
                _remove(directory, wait_s=0.0)
                continue
            made[controller] = directory
        return cls(made, memory_bytes, tasks) if made else None

    @property
    def labels(self) -> list[str]:
        return [_LABELS[c] for c in sorted(self.directories)]

    def enter(self) -> list[str]:
        """A command prefix per cgroup that moves itself in, then execs the rest."""
        prefix = []
        for directory in self.directories.values():
            prefix += [shutil.which("sh"), "-c", 'echo 0 > "$0/cgroup.procs" && exec "$@"', str(directory)]
        return prefix

    def breached(self) -> str | None:
        """What the kernel stopped, said for a sandbox that died: the OOM killer acting in its
        memory cgroup, or a fork refused at its task limit."""
        found = []
        memory = self.directories.get("memory")
        if memory is not None and _counter_in(memory / "memory.oom_control", "oom_kill") > 0:
            found.append(f"the kernel killed it at its host memory limit ({self.memory_bytes / 2**30:g} GiB)")
        pids = self.directories.get("pids")
        if pids is not None and _counter_in(pids / "pids.events", "max") > 0:
            found.append(f"it reached its task limit ({self.tasks} processes and threads)")
        return "; ".join(found) or None

    def remove(self, wait_s: float = 2.0) -> None:
        for directory in self.directories.values():
            _remove(directory, wait_s)
        self.directories = {}


def _counter_in(path: Path, key: str) -> int:
    try:
        for line in path.read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (OSError, ValueError):
        return 0
    return 0
