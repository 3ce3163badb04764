"""A cgroup (v2) of its own per sandbox: the kernel's count of its CPU time, a freeze, a kill.

A sandbox's work can leave its process: threads, children, grandchildren re-parented after
a double fork. Whatever it starts stays in the cgroup it was started in (only a process with
write access to cgroup files can move out, and Landlock gives the sandbox none), so the
cgroup is where the grader looks:

- **CPU time** (``cpu.stat``'s ``usage_usec``): everything the sandbox ran, wherever its
  processes were re-parented and whether or not they are still alive. The kernel adds a
  running thread's time at scheduler events (a tick, a switch), so a read can miss the
  current slice of a thread still on a core: :meth:`SandboxCgroup.exact_usage_ns` reads only
  once no task is running, and freezes the cgroup (every task off its core, its time added)
  when one keeps running.
- **freezing**: while one role is timed, the other roles' sandboxes are frozen
  (``cgroup.freeze``): none of their threads runs, so none can launch GPU work or take a core
  from the timed call.
- **kill** (``cgroup.kill``): every process the sandbox started, in one write.

None of these needs a controller (``cpu.stat``'s usage, ``cgroup.freeze`` and ``cgroup.kill``
are core files), so the grader's own cgroup can hold both the grader and its sandboxes'
cgroups. The limits (grader/cgroup_limits.py) do need controllers: to enable them the
grader's processes move into a leaf child, :data:`LEAF`, and :func:`home` stays the cgroup
above it.
Where no writable cgroup v2 hierarchy holds the grader (a non-root grader without a
delegated cgroup, a kernel before 5.14), :meth:`SandboxCgroup.create` returns None and the
grade's ``isolation`` lacks ``cgroup``: CPU time is then read per process (grader/clock.py)
and nothing is frozen.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import shutil
import time
from pathlib import Path

from pytest_nodus.grader.processes import task_runtimes

CGROUP = "cgroup"  # the isolation entry
# Where grader/cgroup_limits.py moves the processes of the grader's own cgroup. One dash:
# the sweeps below take only "nodus-<grader pid>-..." for a dead grader's.
LEAF = "nodus-processes"

# Freezing a sandbox of a few threads took 0.27 ms (median), 0.94 ms at most, on the 2-core
# CI machine. Past this, the freeze is left to complete on its own (a task in the GPU driver
# freezes when it leaves the kernel).
FREEZE_WAIT_S = 0.5
# How long an exact read waits for the sandbox's tasks to leave their cores before it freezes
# them: the harness blocks on its pipe microseconds after it replies; a thread that still runs
# 2 ms later keeps running (tests/cheats/rmsnorm/spin_after_return.py).
SETTLE_S = 0.002
_counter = itertools.count()


@functools.cache
def home() -> Path | None:
    """The grader's own cgroup v2 directory (above :data:`LEAF` once the grader was moved
    there), if it can hold sandboxes' cgroups."""
    mount = next((fields[4] for fields in _mountinfo() if _fstype(fields) == "cgroup2"), None)
    try:
        own = next(line.split(":", 2)[2].strip() for line in Path("/proc/self/cgroup").read_text().splitlines()
                   if line.startswith("0::"))
    except (OSError, StopIteration):
        return None
    if mount is None:
        return None
    path = Path(mount) / own.lstrip("/")
    if path.name == LEAF:
        path = path.parent
    needed = ("cgroup.procs", "cgroup.freeze", "cgroup.kill", "cpu.stat")
    if not (path / "cgroup.procs").exists() or not os.access(path, os.W_OK):
        return None
    probe = path / f"nodus-probe-{os.getpid()}"
    try:
        probe.mkdir(exist_ok=True)
        usable = all((probe / name).exists() for name in needed)
        probe.rmdir()
    except OSError:
        return None
    if usable:
        _sweep(path)
    return path if usable else None


def _mountinfo() -> list[list[str]]:
    try:
        return [line.split() for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        return []


def _fstype(fields: list[str]) -> str | None:
    return fields[fields.index("-") + 1] if "-" in fields else None


def _sweep(home: Path) -> None:
    """Kill what is left in the cgroups of graders that are gone (killed before they cleaned
    up: a sandbox frozen there would hold its memory for good), then remove them."""
    for stale in home.glob("nodus-*-*"):
        owner = stale.name.split("-")[1]
        if owner.isdigit() and not Path(f"/proc/{owner}").exists():
            try:
                (stale / "cgroup.kill").write_text("1")
            except OSError:
                pass
            for _ in range(20):  # the kill is asynchronous: the cgroup empties within milliseconds
                try:
                    stale.rmdir()
                    break
                except OSError:
                    time.sleep(0.01)


class SandboxCgroup:
    """The cgroup one sandbox runs in, created empty and entered by the sandbox's launcher."""

    def __init__(self, path: Path):
        self.path = path
        self.frozen = False

    @classmethod
    def create(cls, role: str) -> SandboxCgroup | None:
        where = home()
        if where is None or shutil.which("sh") is None:
            return None
        path = where / f"nodus-{os.getpid()}-{next(_counter)}-{role.replace(':', '_')}"
        try:
            path.mkdir()
        except OSError:
            return None
        return cls(path)

    def enter(self) -> list[str]:
        """A command prefix that moves itself into this cgroup, then execs the rest: the
        sandbox's first instruction already runs inside it."""
        return [shutil.which("sh"), "-c", 'echo 0 > "$0/cgroup.procs" && exec "$@"', str(self.path)]

    # -- accounting ---------------------------------------------------------------------
    def usage_ns(self) -> int | None:
        """CPU time of everything that ever ran in this cgroup, to the last scheduler event."""
        try:
            with open(self.path / "cpu.stat") as stat:
                for line in stat:
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
        except (OSError, ValueError):
            return None
        return None

    def exact_usage_ns(self) -> int | None:
        """:meth:`usage_ns` once no task of the cgroup is on a core, so that the time of
        everything that ran until now is in it: waited for up to ``SETTLE_S``, then forced
        by a freeze (which adds the freeze's own cost, tens of microseconds, to the count)."""
        deadline = time.monotonic() + SETTLE_S
        while True:
            tids = self.tasks()
            before = task_runtimes(tids)
            if not any(running for running, _ in before.values()):
                usage = self.usage_ns()
                # A task that shows as sleeping may still be on its way off its core, its
                # slice not yet added; then its runtime moves before this second look.
                if task_runtimes(tids) == before:
                    return usage
            if time.monotonic() > deadline:
                break
            time.sleep(50e-6)
        if self.frozen:
            return self.usage_ns()
        self.freeze()
        try:
            return self.usage_ns()
        finally:
            self.thaw()

    def tasks(self) -> list[int]:
        """Every thread in the cgroup (of every process), by thread id."""
        try:
            return [int(t) for t in (self.path / "cgroup.threads").read_text().split()]
        except (OSError, ValueError):
            return []

    # -- freezing -----------------------------------------------------------------------
    def freeze(self, wait: bool = True) -> bool:
        """Stop every task of the cgroup; True once the kernel says all are frozen."""
        self.frozen = True
        return self._set_frozen(1, wait)

    def thaw(self) -> None:
        self.frozen = False
        self._set_frozen(0, wait=False)  # a thawed task runs when it is scheduled; nothing to wait for

    def _set_frozen(self, value: int, wait: bool) -> bool:
        try:
            (self.path / "cgroup.freeze").write_text(str(value))
        except OSError:
            return False
        return self.wait_frozen(value) if wait else True

    def wait_frozen(self, value: int = 1) -> bool:
        deadline = time.monotonic() + FREEZE_WAIT_S
        while time.monotonic() < deadline:
            if self._event("frozen") == value:
                return True
            time.sleep(20e-6)
        return False

    def _event(self, key: str) -> int | None:
        try:
            for line in (self.path / "cgroup.events").read_text().splitlines():
                name, _, value = line.partition(" ")
                if name == key:
                    return int(value)
        except (OSError, ValueError):
            return None
        return None

    # -- the end ------------------------------------------------------------------------
    def kill(self) -> None:
        """SIGKILL every process in the cgroup, wherever it was re-parented."""
        try:
            (self.path / "cgroup.kill").write_text("1")
        except OSError:
            pass

    def remove(self, wait_s: float = 2.0) -> None:
        """Kill what is left and remove the cgroup once it is empty (a killed process leaves
        it when it has exited; one stuck in the GPU driver is left, with its cgroup, for
        the next grader's sweep)."""
        self.kill()
        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError:
                if time.monotonic() > deadline:
                    return
                time.sleep(0.005)


@contextlib.contextmanager
def frozen(cgroups):
    """Every one of ``cgroups`` frozen for the block: the sandboxes not being called, so that
    none of their threads runs (on a core, or launching GPU work) while another is."""
    held = [c for c in cgroups if c is not None and not c.frozen]
    for cgroup in held:
        cgroup.freeze(wait=False)
    for cgroup in held:
        cgroup.wait_frozen()
    try:
        yield
    finally:
        for cgroup in held:
            cgroup.thaw()
