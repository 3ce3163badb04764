"""CPU time of a sandbox's child processes, on the kernel's own clocks.

A child's CPU time is the sandbox's work as much as its own threads' (a worker forked to do
the kernel's work: ``tests/cheats/rmsnorm/forked_worker.py``). Live children are read on
their per-process CPU clocks (``grader/clock.py``); the ones that ended are read here: what
the sandbox reaped (cutime + cstime) and what its zombies will add. Runs only in the grader.
"""

from __future__ import annotations

import os
import time

from pytest_nodus.grader.processes import children, stat_fields

_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def boot_ticks() -> int:
    """Now, in the unit and origin of a process's start time in /proc/<pid>/stat."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * _TICKS_PER_S)


def _reaped_children_ns(pid: int | None) -> int | None:
    """CPU time, user and system, of the children ``pid`` has waited for (cutime + cstime in
    /proc/<pid>/stat), which includes their own reaped children's."""
    fields = stat_fields(pid) if pid is not None else []
    if len(fields) < 15:
        return None
    return (int(fields[13]) + int(fields[14])) * 1_000_000_000 // _TICKS_PER_S


def ended_children(pid: int | None, kids: set[int] | None = None) -> tuple[int, dict[int, int]] | None:
    """The CPU time of the children of ``pid`` (``kids``, when already listed) that have
    ended: what it reaped (ns), and per zombie (ended, not yet waited for) what reaping it
    will add (utime + stime + cutime + cstime, ns). None once ``pid`` is gone."""
    reaped = _reaped_children_ns(pid)
    if reaped is None:
        return None
    zombies = {}
    for child in children(pid) if kids is None else kids:
        fields = stat_fields(child)
        if len(fields) >= 15 and fields[0] == "Z":
            zombies[child] = sum(int(f) for f in fields[11:15]) * 1_000_000_000 // _TICKS_PER_S
    return reaped, zombies


# What reaping a zombie adds to its parent's reaped time can differ from what its own stat
# said by a tick or two (a reading from the 2-core CI machine: 20 ms).
_REAP_ROUNDING_NS = 2 * 1_000_000_000 // _TICKS_PER_S


def ended_between(opened: tuple[int, dict[int, int]], closed: tuple[int, dict[int, int]]) -> int:
    """CPU time (ns) of the children that ended between two :func:`ended_children` readings.

    A child's time belongs to the window in which it ended, not the one in which it happened
    to be reaped: a child that ends during warm-up stays a zombie until something waits for
    it (``subprocess.Popen`` does when the object is collected, at any later moment), and
    reaped time alone would bill its whole life to whichever call that lands in. So a zombie
    from before the window is taken out when it is reaped inside it (to within the rounding
    above: only a zombie that ended before the window earns that slack), and a child that
    ran and ended inside the window counts, reaped or not (grader/checks.py,
    ``children_ran``, says how such a call is then judged)."""
    (reaped_open, zombies_open), (reaped_close, zombies_close) = opened, closed
    gone = [pid for pid in zombies_open if pid not in zombies_close]
    reaped = reaped_close - reaped_open - sum(zombies_open[pid] for pid in gone)
    if gone:
        reaped = max(0, reaped - len(gone) * _REAP_ROUNDING_NS)
    return reaped + sum(ns for pid, ns in zombies_close.items() if pid not in zombies_open)
