"""The grader's view of the processes its sandboxes start, read from /proc.

A submission may start processes: to do its work where the sandbox's clock does not look,
or to outlive its call. The grader is the child subreaper of everything it starts
(:func:`adopt_orphans`), so a process that leaves a sandbox's tree (double fork,
``setsid``) is reparented here, where :func:`stray_processes` finds and kills it and
:func:`ended_orphans` finds the ones that already ended. Runs only in the grader process.
"""

from __future__ import annotations

import os
import signal
import time


def adopt_orphans() -> bool:
    """Make this (the grader's) process the child subreaper of everything it starts, so a
    process that leaves a sandbox's tree (double fork, ``setsid``) is reparented here, not to
    init, and :func:`stray_processes` finds it. Linux only; False where refused."""
    import ctypes

    try:
        return ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0) == 0  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        return False


def children(pid: int) -> set[int]:
    """Direct children of ``pid`` (all its threads')."""
    found = set()
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return found
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as listing:
                found.update(int(c) for c in listing.read().split())
        except (OSError, ValueError):
            continue
    return found


def descendants(pid: int) -> set[int]:
    """Every live process below ``pid``."""
    found, pending = set(), [pid]
    while pending:
        for child in children(pending.pop()) - found:
            found.add(child)
            pending.append(child)
    return found


def describe_processes(pids) -> list[str]:
    """``pids`` as "pid (command) state", for a flag's detail."""
    described = []
    for child in sorted(pids):
        try:
            with open(f"/proc/{child}/stat") as stat:
                line = stat.read()
        except OSError:
            continue
        name, _, rest = line.partition(" ")[2].rpartition(")")
        described.append(f"{child} {name})" + (f" {rest.split()[0]}" if rest.split() else ""))
    return described


def living(pids) -> set[int]:
    """The ones of ``pids`` that still run: a zombie has ended and only waits to be reaped
    (its CPU time is the clock's business: grader/child_time.py)."""
    return {pid for pid in pids if (fields := stat_fields(pid)) and fields[0] != "Z"}


def stray_processes(sandboxes) -> list[int]:
    """Processes reparented to the grader (:func:`adopt_orphans`) that are not one of its
    ``sandboxes``: started by a sandbox and detached from its tree. Killed and reaped here;
    returned so the grade can say so. Ended ones are only reaped."""
    known = {s.process.pid for s in sandboxes if s.process is not None}
    adopted = {pid: fields for pid, fields in _adopted().items() if pid not in known}
    strays = [pid for pid, fields in adopted.items() if fields[0] != "Z"]
    for pid in strays:
        for stray in [pid, *descendants(pid)]:
            try:
                os.kill(stray, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    for pid in adopted:
        reap(pid)
    return strays


def ended_orphans(since_boot_ticks: int) -> list[int]:
    """Processes that left a sandbox's tree (reparented to the grader, outside its session,
    as :func:`stray_processes` finds them) and have already ended, started at or after
    ``since_boot_ticks`` (/proc's start-time unit). A worker detached and finished inside one
    call (tests/cheats/rmsnorm/orphaned_per_call.py) is alive for no check to find, and its
    CPU time goes to the grader that reaps it. Not reaped here: :func:`stray_processes` does."""
    return [pid for pid, fields in _adopted().items()
            if fields[0] == "Z" and len(fields) > 19 and int(fields[19]) >= since_boot_ticks]


def _adopted() -> dict[int, list[str]]:
    """The grader's children outside its own session, by pid, with their /proc stat fields:
    a sandbox starts its own session and nothing below it can join the grader's again,
    while a process some other code in this pytest started stays in the grader's session."""
    own_session = str(os.getsid(0))
    return {pid: fields for pid in sorted(children(os.getpid()))
            if len(fields := stat_fields(pid)) > 3 and fields[3] != own_session}


# How long the grader waits for a killed process to be gone. A SIGKILLed process normally
# ends at once; one stuck in the GPU driver's teardown must not stall the grader for good
# (while it holds the GPU lock, every other grade on that GPU would wait too).
REAP_TIMEOUT_S = 60.0


def reap(pid: int, timeout_s: float = REAP_TIMEOUT_S) -> bool:
    """Wait for the killed child ``pid`` to end and reap it, for at most ``timeout_s``.
    False if it has not ended by then (it is left as it is)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return True  # not ours, or already reaped
        if done:
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def stat_fields(pid: int) -> list[str]:
    """The fields of /proc/<pid>/stat after the command name, so [0] is the state, [2] the
    process group, [3] the session, [13] and [14] reaped children's user and system ticks,
    [19] the start time in ticks since boot; [] once the process is gone."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return []


def reap_group(pgid: int) -> None:
    """Reap the members of a killed sandbox's process group that were reparented to the
    grader (its child subreaper) when the sandbox itself ended first."""
    for pid in children(os.getpid()):
        fields = stat_fields(pid)
        if len(fields) > 2 and fields[2] == str(pgid):
            reap(pid)


def task_runtimes(tids) -> dict[int, tuple[bool, int]]:
    """Per thread id: (whether it is running or runnable, its CPU time in ns as the scheduler
    last added it up). Threads that are gone are left out."""
    found = {}
    for tid in tids:
        fields = stat_fields(tid)
        try:
            with open(f"/proc/{tid}/schedstat") as schedstat:
                runtime = int(schedstat.read().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if fields:
            found[tid] = (fields[0] == "R", runtime)
    return found
