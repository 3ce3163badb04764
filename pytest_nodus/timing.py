"""What a call costs, and whether the sandbox's claim about it can be believed.

The sandbox times each call with CUDA events on the current stream (``t_stream``: start to
the moment the call returned) and to the end of a device-wide synchronise (``t_call``),
or with ``perf_counter`` on the CPU. Expert and submission are timed in the same run,
interleaved call by call (order alternating), each call on fresh inputs with L2 flushed.

Three checks turn the claims into numbers the grader trusts:

- **Work left running at return.** ``t_call - t_stream`` is the time the device was still
  busy after the call returned on the current stream. For the expert it is only the
  synchronise's own latency ``L``; a submission's excess over ``L`` is work on another
  stream (or launched late) and is flagged, and the counted time is
  ``max(t_stream, t_call - L)``: timed in full either way.
- **Wall clock (recorded, not enforced).** The grader measures each request's round trip
  itself; ``wall - O`` (``O``: the expert's per-call overhead at this size) is stored as
  ``t_submission_wall_ms``. As a flag it was unsound: on the H200 a 25% slack flagged 4 of
  9 correct kernel styles (torch-op composites, joined streams, per-input CUDA graphs),
  because the harness's own work around a call (allocator refills, copies) varies with the
  submission's memory behaviour. Enforcing it needs that work moved out of the window.
- **Physical floor.** Faster than moving the size's bytes or doing its FLOPs at the
  datasheet peak (with :data:`devices.FLOOR_FRACTION` slack) is impossible.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field

# Work still running after return is flagged above the expert's sync latency plus this.
PENDING_SLACK_ABS_MS = 0.05
PENDING_SLACK_REL = 0.05


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

    t_stream_ms: float
    t_call_ms: float
    wall_ms: float


def sync_latency(expert_calls: list[CallTimes]) -> float:
    return statistics.median(c.t_call_ms - c.t_stream_ms for c in expert_calls) if expert_calls else 0.0


def counted(calls: list[CallTimes], latency_ms: float) -> Measurement:
    return Measurement([max(c.t_stream_ms, c.t_call_ms - latency_ms) for c in calls])


def pending_work_ms(calls: list[CallTimes], latency_ms: float) -> float:
    """Median device time still running after the call returned, beyond sync latency."""
    return statistics.median(c.t_call_ms - c.t_stream_ms for c in calls) - latency_ms if calls else 0.0


def pending_work_flag(calls: list[CallTimes], latency_ms: float) -> str | None:
    if not calls:
        return None
    excess = pending_work_ms(calls, latency_ms)
    stream = statistics.median(c.t_stream_ms for c in calls)
    if excess > PENDING_SLACK_ABS_MS + PENDING_SLACK_REL * stream:
        return f"device still busy {excess:.3f} ms after the call returned (work on another stream or launched late)"
    return None


def wall_implied_ms(submission: list[CallTimes], expert: list[CallTimes]) -> float | None:
    """The submission's per-call time as the grader's own clock sees it (diagnostic)."""
    if not submission or not expert:
        return None
    overhead = statistics.median(c.wall_ms - c.t_call_ms for c in expert)
    return max(statistics.median(c.wall_ms for c in submission) - overhead, 0.0)


def floor_flag(time_ms: float | None, floor_ms: float | None) -> str | None:
    if time_ms is None or floor_ms is None:
        return None
    if time_ms < floor_ms:
        return f"{time_ms:.4f} ms is under the physical floor of {floor_ms:.4f} ms for this size"
    return None
