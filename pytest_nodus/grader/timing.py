"""What a call costs, and whether the sandbox's claim about it can be believed.

The sandbox times each call with CUDA events on the current stream (``t_stream``: start to
the moment the call returned and the harness had written the output words and the flag
behind it) and to the end of a device-wide synchronise (``t_call``),
or with its process's CPU time (all threads) on the CPU. Expert and submission are timed in the same run,
interleaved call by call (order alternating), each call on fresh inputs with L2 flushed.
Those are the sandbox's claims; the grader also times every call on its own clock
(``grader/clock.py``), and that window is what the claims are held to.

Four rules turn them into numbers the grader trusts:

- **The grader's clock counts, for every role.** The window holds the call plus a fixed
  cost: the grader's own work (input copies, flush, snapshot), the same for every role at a
  size, and the two handoffs between the grader's GPU context and the sandbox's (``go`` to
  the sandbox's first event, its flag back to the grader's stream), which are not: on the
  H200 they take 1.3-1.6 us longer for one sandbox's context than for another's running
  the same code (``tools/probes/role_asymmetry.sh``, docs/timing.md). The expert's claims
  are trusted (it is the grader's own code in its own process), so its fixed cost is
  measured on it: ``overhead = median(window - t_stream)`` over its calls. The submission's
  is measured the same way on its own claims, and believed only as far as it is smaller:
  ``min(overhead, median(window - t_stream))``. A claim that shrinks its ``t_stream`` would
  raise that figure, and finds the expert's in its way; one that grows it lowers the figure
  and lengthens the submission's own time. So a claim can still only cost its maker. Each
  role's time is ``median(window - its overhead)`` over its calls, so a claim's own quirks
  (a return event the GPU stamped late, the host's enqueueing in ``t_call``) favour
  neither. A baseline (trusted context) has no input copies in its window (its untimed
  ``prepare`` read them), so its fixed cost is measured on its own claims the same way.
- **Claims are tripwires, never the count nor the record.** A submission's median claim
  (``max(t_stream, t_call - L)``) far under the grader's clock, beyond the slack below, is a
  forged time and flagged. None of its claims is recorded (``CallTimes.unclaimed``): a claim
  is a number the submission writes freely, so any digit of it could carry a payload (a
  hidden size's dims) to whoever reads the grade.
- **Work left running at return.** ``t_call - t_stream`` is the time the device was still
  busy after the call returned on the current stream. For the expert it is only the
  synchronise's own latency ``L``; a submission's excess over ``L`` is work on another
  stream (or launched late) and is flagged. (The window itself spans every stream up to
  the snapshot of the outputs; work still running after it lands in the next round's idle
  probe, ``grader/gpu_idle.py``.)
- **Physical floor.** Faster than moving the size's bytes or doing its FLOPs at the
  datasheet peak (with :data:`devices.FLOOR_FRACTION` slack) is impossible.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

# Work still running after return is flagged above the expert's sync latency plus this.
PENDING_SLACK_ABS_MS = 0.05
PENDING_SLACK_REL = 0.05
# A claim is a forgery when the grader's clock saw more than the claim plus this much.
# GPU: for honest kernels the two agree within 3% on the H200, while a forger claiming half
# is seen at its true time. CPU: claim and clock are both the
# sandbox process's CPU time (all threads); the clock also holds the Python bookkeeping around the
# call (0.35-0.5 ms on the 2-core CI machine, the fixed cost subtracted), varying by ~0.1 ms.
CLOCK_SLACK = {"cuda": (0.01, 0.10), "cpu": (0.5, 0.5)}  # (ms, fraction of the claim)
# How far under the expert's fixed cost the submission's own may be believed (a fraction of
# the expert's). On the H200 the contexts' handoffs differ by 1.3-1.6 us on fixed costs of
# 430-750 us (0.2-0.35%); 1% covers that three times over, and bounds what a quirk of an
# honest kernel's claims (or a claim grown on purpose) can cost it: 1% of the fixed cost.
OWN_OVERHEAD_RANGE = 0.01


@dataclass
class Measurement:
    """Raw per-call times (ms) of one kernel at one size, with their summary."""

    times_ms: list[float] = field(default_factory=list)

    @property
    def median(self) -> float | None:
        return statistics.median(self.times_ms) if self.times_ms else None

    @property
    def iqr(self) -> float | None:
        if len(self.times_ms) < 4:
            return None
        q = statistics.quantiles(self.times_ms, n=4)
        return q[2] - q[0]


@dataclass
class CallTimes:
    """One call as the sandbox reported it and as the grader's clock saw it."""

    t_stream_ms: float | None  # None: a submission's claim, left out of the record (``unclaimed``)
    t_call_ms: float | None
    grader_ms: float | None  # the grader's window (None: the call never reached it)
    contended_ns: int = 0  # another context held the GPU as the window opened (grader/gpu_idle.py): not timed
    # The window's two grader-only ends (open to go, flag to close): its own work, which the
    # sandbox only shares the GPU with. None on the CPU.
    parts_ms: tuple | None = None

    @property
    def claimed(self) -> bool:
        return self.t_stream_ms is not None and self.t_call_ms is not None

    def unclaimed(self) -> CallTimes:
        """What the record keeps of a submission's call: the grader's window only."""
        return CallTimes(None, None, self.grader_ms, self.contended_ns, self.parts_ms)

    def as_json(self) -> dict:
        """The grade's ``timed_calls`` entry (schema: ``window_ms`` is ``grader_ms``)."""
        return {"t_stream_ms": self.t_stream_ms, "t_call_ms": self.t_call_ms, "window_ms": self.grader_ms,
                "window_parts_ms": self.parts_ms}

    @classmethod
    def from_json(cls, entry: dict) -> CallTimes:
        parts = entry.get("window_parts_ms")
        return cls(entry["t_stream_ms"], entry["t_call_ms"], entry["window_ms"], parts_ms=tuple(parts) if parts else None)


def sync_latency(expert_calls: list[CallTimes]) -> float:
    return statistics.median(c.t_call_ms - c.t_stream_ms for c in expert_calls) if expert_calls else 0.0


def on_clock(calls: list[CallTimes], overhead_ms: float | None) -> Measurement:
    """Each call's time on the grader's clock: its window less the fixed cost. A call that
    does next to nothing can read under the fixed cost (a lazy proxy read -0.06 ms on the
    H200); no call takes less than nothing."""
    if overhead_ms is None:
        return Measurement()
    return Measurement([max(c.grader_ms - overhead_ms, 0.0) for c in calls if c.grader_ms is not None])


def median_claim(calls: list[CallTimes], latency_ms: float) -> float | None:
    """The median of what the sandbox says its calls took, work left running included."""
    claims = [max(c.t_stream_ms, c.t_call_ms - latency_ms) for c in calls if c.claimed]
    return statistics.median(claims) if claims else None


def pending_work_ms(calls: list[CallTimes], latency_ms: float) -> float:
    """Median device time still running after the call returned, beyond sync latency."""
    return statistics.median(c.t_call_ms - c.t_stream_ms for c in calls) - latency_ms if calls else 0.0


def pending_work_flag(calls: list[CallTimes], latency_ms: float) -> str | None:
    if not calls:
        return None
    excess = pending_work_ms(calls, latency_ms)
    stream = statistics.median(c.t_stream_ms for c in calls)
    if excess > PENDING_SLACK_ABS_MS + PENDING_SLACK_REL * stream:
        # The figures are the sandbox's own: the message carries none of them.
        return ("the sandbox's synchronise found the device still busy after the call returned, beyond the "
                "synchronise's own latency (work on another stream or launched late)")
    return None


def clock_overhead(calls: list[CallTimes]) -> float | None:
    """The window's fixed cost at this size, measured on the claims of ``calls``."""
    spans = [c.grader_ms - c.t_stream_ms for c in calls if c.grader_ms is not None and c.claimed]
    return statistics.median(spans) if spans else None


def submission_overhead(expert_overhead: float | None, calls: list[CallTimes],
                        recorded_ms: float | None = None) -> float | None:
    """The fixed cost taken off the submission's windows: its own, where its claims show one
    smaller than the expert's (by at most :data:`OWN_OVERHEAD_RANGE`), else the expert's. A
    grade's record keeps no claims, so a recount passes the figure the grade applied
    (``recorded_ms``)."""
    if expert_overhead is None:
        return None
    if any(c.claimed for c in calls):
        own = clock_overhead(calls)
        if own is None:
            return expert_overhead
        return min(expert_overhead, max(own, expert_overhead - OWN_OVERHEAD_RANGE * abs(expert_overhead)))
    return expert_overhead if recorded_ms is None else recorded_ms


def forged_time_flag(claimed_ms: float | None, grader_ms: float | None, device_kind: str) -> str | None:
    if claimed_ms is None or grader_ms is None:
        return None
    slack_abs, slack_rel = CLOCK_SLACK[device_kind]
    if grader_ms > claimed_ms * (1 + slack_rel) + slack_abs:
        # The grader's figure only: the claim is a number the submission chose.
        return (f"the sandbox reported less time per call than the grader's clock measured ({grader_ms:.4f} ms), "
                "beyond the clocks' slack (reported times were forged)")
    return None


def floor_flag(time_ms: float | None, floor_ms: float | None) -> str | None:
    if time_ms is None or floor_ms is None:
        return None
    if time_ms < floor_ms:
        return f"{time_ms:.4f} ms is under the physical floor of {floor_ms:.4f} ms for this size"
    return None


@dataclass
class SizeTimes:
    """One size's times, every role's calls read by the rules above (what a grade reports)."""

    latency_ms: float
    overhead_ms: float | None  # the expert's fixed cost
    submission_overhead_ms: float | None  # the one taken off the submission's windows (submission_overhead)
    expert: Measurement
    submission: Measurement  # the submission's calls on the grader's clock, less the fixed cost
    baselines_ms: dict[str, float]
    flags: list[tuple[str, str]]  # (code, reason): the claims' tripwires, forged_time and pending_work

    @property
    def submission_ms(self) -> float | None:
        return self.submission.median


def summarise(times: dict[str, list[CallTimes]], device_kind: str,
              recorded_submission_overhead_ms: float | None = None) -> SizeTimes:
    """``times``: calls per role (``expert``, ``submission``, ``baseline:<name>``). Pure
    arithmetic on the recorded readings, so a grade's JSON (``timed_calls``) can be counted
    again by ``nodus-recount`` exactly as the grader counted it, given the submission's fixed
    cost the grade applied (``recorded_submission_overhead_ms``). The tripwires need the
    submission's claims, which the record does not keep: counted again, they raise nothing."""
    latency = sync_latency(times["expert"])
    overhead = clock_overhead(times["expert"])
    baselines = {role.removeprefix("baseline:"): on_clock(calls, clock_overhead(calls)).median
                 for role, calls in times.items() if role.startswith("baseline:") and calls}
    own_overhead = submission_overhead(overhead, times["submission"], recorded_submission_overhead_ms)
    submission = on_clock(times["submission"], own_overhead)
    flags = []
    claims = [c for c in times["submission"] if c.claimed]
    if claims:
        flags.append(("forged_time", forged_time_flag(median_claim(claims, latency), submission.median, device_kind)))
        if device_kind == "cuda":  # the CPU has no streams to leave work on
            flags.append(("pending_work", pending_work_flag(claims, latency)))
    return SizeTimes(latency, overhead, own_overhead, on_clock(times["expert"], overhead), submission, baselines,
                     [(code, reason) for code, reason in flags if reason])
