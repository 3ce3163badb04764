"""Where a grade's time goes: wall time per phase, per size and for the whole grade.

Every figure is on the grader's own clock (``time.perf_counter``), except the stages of a
sandbox's start-up, which the sandbox marks on the system's monotonic clock *before any line
of the kernel file runs* and reports in a message of its own (``protocol.STAGED``): the
submission cannot touch them. The kernel file's load is timed by the grader, from that
message to the hello.

Per size (``SizeResult.phases``, ms):

=================== ==========================================================================
``start``           starting sandboxes at this size (first size, or a larger arena), all roles,
                    from each launch to its freeze before its first call
``start_<stage>``   the same, by stage, summed over the sandboxes (which start side by side, so
                    the sum can exceed ``start``), each counted at the size where it is first
                    called (the expert's, launched beside the fuzz, at the first timed size): ``process`` (interpreter and imports, from
                    the spawn), ``preload`` (a trusted sandbox in standby importing its
                    compiler: grader/standby.py), ``standby`` (waiting for its launch), ``context`` (the device's
                    context), ``removal`` (library kernels removed), ``arena`` (grader-owned
                    memory mapped, Triton imported), ``confinement`` (Landlock, seccomp),
                    ``load`` (the kernel file imported); ``grader``, the grader's own side of
                    the launch (at the grade's first: its device context and its clock's
                    kernels; each time: the spawn where none stood by, the arena made and
                    sent). A sandbox spawned as pytest configured
                    (``grader/standby.py``) spent its ``process`` and ``standby`` before the
                    size began, beside the grader's own start-up
``gpu_wait``        waiting for the GPU that other grades on it held for their timing
                    (``devices.exclusive``) or whose memory they held (``gpu_memory.waiting_for_memory``);
                    0 on the CPU
``inputs``          fresh inputs made
``reference``       the fp32 reference computed
``verification``    outputs, inputs and processes checked; ``verification_<part>`` the same by
                    part: ``place`` (the call's slots in the arena), ``outputs`` (aliasing and
                    late writes), ``processes`` (strays and orphans), ``inputs`` (every input
                    against its pristine copy), ``values`` (every output against the
                    reference); the rest is the reading's own handling
``calls``           the calls as the grader waits for them: arm, idle probe, window, report
``calls_<part>``    the same, by part: ``freeze`` (every other sandbox frozen), ``arm`` (the
                    sandbox prepares: arguments, free memory scrubbed, a synchronise), ``open``
                    (inputs copied, the idle probe waited for), ``go`` (until the submission's
                    sandbox says the call is enqueued; ``expert`` the same for the expert and
                    baselines; a sandbox's first call at a size is ``first`` for a submission,
                    ``setup`` for the expert and baselines: what it compiles, tunes or builds
                    for those shapes; ``idle`` before a set-up: the GPU shown idle of every
                    other context, grader/gpu_idle.py), ``close`` (the snapshot queued), ``report`` (the
                    sandbox's report, and the window's end on the grader's stream)
``timed``           the part of ``calls`` that is timed kernel work: the windows of the timed
                    calls of every role (what the reward is made of)
``rest``            after a submission's call: its threads given time to fall idle, then frozen
``finish``          after a size: the late-write check and the kernel audit
``warm``            ``--nodus-warm-together``: a batch's first calls at the size side by side
                    before its rounds (grader/warm_up.py), on each submission's record
``shrink``          local grades: a failing public size shrunk to a smaller size that still
                    fails, once per attempt and grade (each trial a verified call, and a
                    sandbox restart after a crash)
=================== ==========================================================================

The grade's ``phases`` adds them up over sizes, with the grading process's ``startup`` (pytest's
start to the first graded test: torch's import, collection) and ``teardown`` (sandboxes
closed) where one process graded every size, ``wall``, ``outside_sizes`` (the rest: pytest's
own work between tests, Hypothesis, the report; negative under xdist, whose workers grade
sizes side by side) and ``overhead_ratio``: the grade's wall time per unit of timed work.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager

STAGES = ("process", "preload", "standby", "context", "removal", "arena", "confinement")  # then "load", timed by the grader


@contextmanager
def timed(phases: dict, name: str):
    started = time.perf_counter()
    try:
        yield
    finally:
        add(phases, name, 1e3 * (time.perf_counter() - started))


@contextmanager
def remainder(phases: dict, name: str, parts: tuple[str, ...]):
    """Time a block, and add to ``name`` the part of it that the ``parts`` timed inside did not take."""
    before, started = sum(phases.get(p, 0.0) for p in parts), time.perf_counter()
    try:
        yield
    finally:
        inside = sum(phases.get(p, 0.0) for p in parts) - before
        add(phases, name, 1e3 * (time.perf_counter() - started) - inside)


def add(phases: dict, name: str, ms: float) -> None:
    phases[name] = phases.get(name, 0.0) + ms


class Laps:
    """Consecutive parts of one block, each added to ``phases`` as ``<prefix><part>`` when it
    ends (``lap``); with ``phases`` None nothing is recorded."""

    def __init__(self, phases: dict | None, prefix: str):
        self.phases, self.prefix, self.last = phases, prefix, time.perf_counter()

    def lap(self, part: str) -> float:
        """The part's ms, also returned."""
        now = time.perf_counter()
        ms = 1e3 * (now - self.last)
        if self.phases is not None:
            add(self.phases, self.prefix + part, ms)
        self.last = now
        return ms

    def skip(self) -> None:
        """Start the next part now: what ran since the last lap is recorded elsewhere."""
        self.last = time.perf_counter()


def stages(spawned: float, marks, staged_at: float, hello_at: float) -> dict[str, float]:
    """A sandbox's start-up by stage, in ms: ``marks`` are the sandbox's ``[stage, monotonic s]``
    in order (``protocol.STAGED``), ``spawned``, ``staged_at`` and ``hello_at`` the grader's
    ``time.monotonic()`` at the spawn and at each message's arrival. Marks that are not in
    order within that span are dropped: no figure is better than a wrong one."""
    out, last = {}, spawned
    for mark in marks if isinstance(marks, list) else []:
        if not (isinstance(mark, list) and len(mark) == 2 and mark[0] in STAGES and isinstance(mark[1], (int, float))
                and math.isfinite(mark[1]) and last <= mark[1] <= staged_at):
            return {}
        out[f"start_{mark[0]}"] = 1e3 * (mark[1] - last)
        last = mark[1]
    out["start_load"] = 1e3 * (hello_at - staged_at)
    return out


def rounded(phases: dict) -> dict[str, float]:
    return {name: round(ms, 1) for name, ms in phases.items()}


def grade_phases(sizes: list[dict], wall_s: float | None, outside: dict | None = None) -> dict[str, float | None]:
    """The grade's phases: the sizes' added up; ``outside`` the grading process's own ``startup``
    (from pytest's start to the first graded test: torch's import, collection) and
    ``teardown`` (the sandboxes closed), where one process graded every size; the wall, what
    else lay outside the sizes (pytest's own work between tests, Hypothesis, the report), and
    the wall time per unit of timed kernel work."""
    total: dict[str, float] = {}
    for size in sizes:
        for name, ms in (size.get("phases") or {}).items():
            add(total, name, ms)
    for name, ms in (outside or {}).items():
        add(total, name, ms)
    out = rounded(total)
    if wall_s is not None:
        # Parts (start_<stage>, calls_<part>, verification_<part>, timed) are already inside their whole.
        accounted = sum(v for k, v in total.items()
                        if not k.startswith(("start_", "calls_", "verification_")) and k != "timed")
        out["wall"] = round(1e3 * wall_s, 1)
        out["outside_sizes"] = round(1e3 * wall_s - accounted, 1)
        out["overhead_ratio"] = round(1e3 * wall_s / total["timed"], 1) if total.get("timed") else None
    return out


def line(phases: dict) -> str:
    """The terminal's one line of where the time went."""
    def s(name):
        return f"{phases.get(name, 0.0) / 1e3:.1f}"
    # The wait for the GPU shows only in grades that took its lock: never on the CPU.
    waited = [f"gpu wait {s('gpu_wait')}"] if phases.get("gpu_wait") else []
    shrunk = [f"shrink {s('shrink')}"] if phases.get("shrink") else []  # local grades that failed only
    warmed = [f"warm {s('warm')}"] if phases.get("warm") else []  # --nodus-warm-together only
    parts = [f"startup {s('startup')}", f"sandbox starts {s('start')}", *waited, f"inputs {s('inputs')}",
             f"reference {s('reference')}", f"verification {s('verification')}", *warmed,
             f"calls {s('calls')} (first {s('calls_first')}, expert setup {s('calls_setup')}, timed {s('timed')})",
             f"rest {s('rest')}", f"finish {s('finish')}", *shrunk,
             f"teardown {s('teardown')}", f"other {s('outside_sizes')}"]
    ratio = phases.get("overhead_ratio")
    return (f"time (s): wall {s('wall')} = " + " + ".join(parts)
            + (f"; {ratio:.0f}x the timed kernel work" if ratio else ""))
