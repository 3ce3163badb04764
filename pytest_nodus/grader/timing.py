"""What a call costs, and whether the sandbox's claim about it can be believed.

The sandbox times each call with CUDA events on the current stream (``t_stream``: start to
the moment the call returned and the harness had written the output words and the flag
behind it) and to the end of a device-wide synchronise (``t_call``),
or with its process's CPU time (all threads) on the CPU. Expert and submission are timed in the same run,
interleaved call by call (order alternating), each call on fresh inputs with L2 flushed.
Those are the sandbox's claims; the grader also times every call on its own clock
(``grader/clock.py``), and that window is what the claims are held to.

Five rules turn them into numbers the grader trusts:

- **The grader's clock counts.** The window holds the call plus a fixed cost (input copies,
  flush, receipt copies) that is the same for expert and submission at a size. The
  expert's claims are trusted (it is the grader's own code in its own process), so the
  fixed cost is measured on it: ``overhead = median(window - t_stream)`` over its calls.
  The submission's time is ``median(window) - overhead``: its own claims never enter the
  count. They are tripwires: a median claim far under the grader's clock (beyond the slack
  below) is a forged time and flagged. The record keeps none of them (``unclaimed``): a
  claim is a number the submission writes freely, so every digit of it could carry a
  payload (a hidden size's dims) to whoever reads the grade; what is recorded of the
  submission is what the grader measured.
- **Work left running at return.** ``t_call - t_stream`` is the time the device was still
  busy after the call returned on the current stream. For the expert it is only the
  synchronise's own latency ``L``; a submission's excess over ``L`` is work on another
  stream (or launched late) and is flagged. A trusted role's time is
  ``max(t_stream, t_call - L)``: timed in full either way. (The submission's window already
  spans every stream up to the snapshot of its outputs; work still running after that
  lands in the next round's idle probe, ``grader/gpu_idle.py``.)
- **A return marked late.** Now and then the GPU stamps the sandbox's return event well
  after the flag that precedes it on the same stream, close to the synchronise's own event,
  while the host and the synchronise ran on time (on the H200: 0.2 ms calls read as
  0.52-0.80 ms, the grader's window 0.20-0.47 ms, ``t_call - t_stream`` 0.02-0.06 ms where it is
  0.32 ms in every other call; tests/data/h200_attention_solution.json holds such a grade). It happens when the GPU has caught up with the host by the
  time the harness marks the return: in some calls of a kernel whose host work outlasts its
  GPU work, in every call of one that waits on the GPU inside the call (a cheat that reads
  samples of its inputs to the host: 0.49 ms read for a 0.18 ms window). Such a
  reading says when the mark was stamped, not when the call ended, so a call whose
  ``t_stream`` lies beyond the grader's window for it (less the fixed cost, beyond the
  clocks' slack) is counted at ``max(window - overhead, t_call - L)``: never under what the
  grader saw, and with any work left on other streams still in it (``t_call - L`` also holds
  the harness's enqueueing after the GPU went idle, 0.03-0.06 ms on the H200: the price of
  still counting that work). A late mark makes ``t_call - t_stream`` read short, so it can
  only lower the pending-work reading, whose time is counted through ``t_call - L``
  regardless. The rule reads the trusted roles' calls (the expert's, a baseline's).
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

    @property
    def claimed(self) -> bool:
        return self.t_stream_ms is not None and self.t_call_ms is not None

    def unclaimed(self) -> CallTimes:
        """What the record keeps of a submission's call: the grader's window only."""
        return CallTimes(None, None, self.grader_ms, self.contended_ns)

    def as_json(self) -> dict:
        """The grade's ``timed_calls`` entry (schema: ``window_ms`` is ``grader_ms``)."""
        return {"t_stream_ms": self.t_stream_ms, "t_call_ms": self.t_call_ms, "window_ms": self.grader_ms}

    @classmethod
    def from_json(cls, entry: dict) -> CallTimes:
        return cls(entry["t_stream_ms"], entry["t_call_ms"], entry["window_ms"])


def sync_latency(expert_calls: list[CallTimes]) -> float:
    return statistics.median(c.t_call_ms - c.t_stream_ms for c in expert_calls) if expert_calls else 0.0


def counted(calls: list[CallTimes], latency_ms: float, overhead_ms: float | None = None,
            device_kind: str = "cuda") -> Measurement:
    """Each call's time: ``max(t_stream, t_call - L)``, unless its return was marked late."""
    return Measurement([call_time(c, latency_ms, overhead_ms, device_kind) for c in calls])


def call_time(c: CallTimes, latency_ms: float, overhead_ms: float | None, device_kind: str) -> float:
    if marked_late(c, overhead_ms, device_kind):
        return max(_seen(c, overhead_ms), c.t_call_ms - latency_ms)
    return max(c.t_stream_ms, c.t_call_ms - latency_ms)


def marked_late(c: CallTimes, overhead_ms: float | None, device_kind: str) -> bool:
    """The return's mark lies beyond the grader's own window for this call (less the
    window's fixed cost) by more than the two clocks ever differ for an honest call: the
    slack that, the other way round, flags a forged time. Without a window the claim stands."""
    if overhead_ms is None or c.grader_ms is None or not c.claimed:
        return False
    slack_abs, slack_rel = CLOCK_SLACK[device_kind]
    return c.t_stream_ms > _seen(c, overhead_ms) * (1 + slack_rel) + slack_abs


def _seen(c: CallTimes, overhead_ms: float) -> float:
    # A call that does next to nothing can read under the fixed cost (a lazy proxy read
    # -0.06 ms on the H200); no call takes less than nothing.
    return max(c.grader_ms - overhead_ms, 0.0)


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


def clock_overhead(expert_calls: list[CallTimes]) -> float | None:
    """The window's fixed cost at this size, measured on the (trusted) expert."""
    spans = [c.grader_ms - c.t_stream_ms for c in expert_calls if c.grader_ms is not None]
    return statistics.median(spans) if spans else None


def grader_time_ms(calls: list[CallTimes], overhead: float | None) -> float | None:
    """A kernel's per-call time as the grader's own clock saw it."""
    windows = [c.grader_ms for c in calls if c.grader_ms is not None]
    if overhead is None or not windows:
        return None
    return max(statistics.median(windows) - overhead, 0.0)


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
    overhead_ms: float | None
    expert: Measurement
    submission: Measurement  # the submission's calls on the grader's clock, less the fixed cost
    baselines_ms: dict[str, float]
    flags: list[tuple[str, str]]  # (code, reason): the claims' tripwires, forged_time and pending_work

    @property
    def submission_ms(self) -> float | None:
        return self.submission.median


def summarise(times: dict[str, list[CallTimes]], device_kind: str) -> SizeTimes:
    """``times``: calls per role (``expert``, ``submission``, ``baseline:<name>``). Pure
    arithmetic on the recorded readings, so a grade's JSON (``timed_calls``) can be counted
    again by ``nodus-recount`` exactly as the grader counted it. The tripwires need the
    submission's claims, which the record does not keep: counted again, they raise nothing."""
    latency = sync_latency(times["expert"])
    overhead = clock_overhead(times["expert"])
    baselines = {role.removeprefix("baseline:"): counted(calls, latency, overhead, device_kind).median
                 for role, calls in times.items() if role.startswith("baseline:") and calls}
    submission = times["submission"]
    seen = Measurement([] if overhead is None else
                       [_seen(c, overhead) for c in submission if c.grader_ms is not None])
    flags = []
    claims = [c for c in submission if c.claimed]
    if claims:
        claimed = counted(claims, latency, overhead, device_kind)
        flags.append(("forged_time", forged_time_flag(claimed.median, seen.median, device_kind)))
        if device_kind == "cuda":  # the CPU has no streams to leave work on
            flags.append(("pending_work", pending_work_flag(claims, latency)))
    return SizeTimes(latency, overhead, counted(times["expert"], latency, overhead, device_kind), seen,
                     baselines, [(code, reason) for code, reason in flags if reason])
