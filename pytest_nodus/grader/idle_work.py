"""Work a sandbox did while it had no call: the grader's count, from the scheduler's.

Between its calls a sandbox has nothing to compute: the harness answers requests on its main
thread, and every other thread and process it holds should be asleep. A thread that keeps
working after a call returned is doing work no clock was asked to time (finishing the
outputs, preparing the next call, launching GPU work behind the other role's back). A
thread that is merely alive (a pool started at the first call and parked on a condition
variable: tests/correct/rmsnorm/idle_thread_pool.py) costs nothing and is not flagged.

The count is the scheduler's own: each thread's runtime (``/proc/<tid>/schedstat``) as a
timed call returns and again once its threads have fallen idle (``settle``), for every thread
of the sandbox's cgroup (grader/cgroup.py), or of its process and live descendants where it
has none; the harness's main thread is left out. Then the sandbox is frozen until its next
request (``Sandbox.rest``): nothing of it runs between its calls, and work a thread left
undone resumes inside its next window. Without a cgroup nothing is frozen, and the count
runs on until the next request is sent. Runs only in the grader.
"""

from __future__ import annotations

import time
from pathlib import Path

from pytest_nodus.grader.processes import descendants, task_runtimes

# CPU time the sandbox's other threads may spend between two calls. A pool's workers spin
# briefly after a parallel region before they sleep (libgomp's default spin count is
# 300,000 polls: well under a millisecond per thread), and the CUDA driver's helper threads
# wake now and then; a thread kept busy runs ~1 ms per ms, and a few ms pass between calls.
ALLOWED_MS = 2.0
# How long a sandbox that returned is given to fall idle before its threads' work is counted
# and it is frozen (grader/grading.py, ``_rest``). An honest sandbox is idle at once (a pool's
# workers sleep within a millisecond of getting a core), and a busy thread ends the wait as
# soon as it has run ALLOWED_MS: the length only matters on a loaded machine, where a busy
# thread must still get a core long enough to show (a third of one: 16 ms in 50 ms).
SETTLE_S = 0.050


def _threads(sandbox) -> list[int]:
    """Every thread of the sandbox but its main one (and its launcher's)."""
    if sandbox.cgroup is not None:
        tids = sandbox.cgroup.tasks()
    else:
        tids = []
        for pid in {sandbox.pid, *descendants(sandbox.pid)}:
            try:
                tids += [int(entry.name) for entry in Path(f"/proc/{pid}/task").iterdir()]
            except (OSError, ValueError):
                continue
    return [t for t in tids if t not in _harness(sandbox)]


def _harness(sandbox) -> tuple[int, ...]:
    return tuple(p for p in (sandbox.pid, sandbox.process.pid if sandbox.process else None) if p is not None)


class IdleWatch:
    """One per sandbox: where its threads stood as its last timed call returned."""

    def __init__(self) -> None:
        self._at_return: tuple[int | None, int, dict[int, int]] | None = None

    def _now(self, sandbox) -> tuple[int | None, int, dict[int, int]]:
        """(the cgroup's whole count or None, the harness threads' runtime, the others' by tid)."""
        total = sandbox.cgroup.usage_ns() if sandbox.cgroup is not None else None
        harness = sum(ns for _, ns in task_runtimes(_harness(sandbox)).values())
        return total, harness, {tid: ns for tid, (_, ns) in task_runtimes(_threads(sandbox)).items()}

    def returned(self, sandbox) -> None:
        """A timed call has returned and been reported: from here the sandbox is idle."""
        self._at_return = self._now(sandbox)

    def settle(self, sandbox) -> None:
        """Wait until no thread of the sandbox but its harness is running, or until what they
        ran since :meth:`returned` is already over ``ALLOWED_MS``, for ``SETTLE_S`` at most."""
        deadline = time.monotonic() + SETTLE_S
        while self._at_return is not None and time.monotonic() < deadline:
            if not any(running for running, _ in task_runtimes(_threads(sandbox)).values()):
                return
            if self._since(sandbox)[0] > ALLOWED_MS:
                return
            time.sleep(100e-6)

    def worked(self, sandbox) -> tuple[float, list[str]] | None:
        """Since :meth:`returned`: (ms of CPU everything but the harness spent, the busiest
        threads), or None when there was no timed call to start from. Starts over. With a
        cgroup the count holds threads and processes that ended meanwhile too."""
        if self._at_return is None:
            return None
        found, self._at_return = self._since(sandbox), None
        return found

    def _since(self, sandbox) -> tuple[float, list[str]]:
        total_then, harness_then, then = self._at_return
        total_now, harness_now, now = self._now(sandbox)
        spent = {tid: ns - then.get(tid, 0) for tid, ns in now.items()}
        if total_now is not None and total_then is not None:
            others = total_now - total_then - (harness_now - harness_then)
        else:
            others = sum(spent.values())
        busy = sorted((ns, tid) for tid, ns in spent.items() if ns > 0)[::-1]
        return others / 1e6, [f"{_name(tid)} {ns / 1e6:.1f} ms" for ns, tid in busy[:3]]


def _name(tid: int) -> str:
    try:
        return f"thread {tid} ({Path(f'/proc/{tid}/comm').read_text().strip()})"
    except OSError:
        return f"thread {tid}"
