"""A timed size's times as the grade records them: every call's readings, each role's median and
IQR, the speedup and throughput, and the physical floor.

The rules that turn readings into times are ``grader/timing.py``; this module writes their
outcome into the size's :class:`~pytest_nodus.grader.results.SizeResult`.
"""

from __future__ import annotations

from pytest_nodus.grader import devices, phases, timing
from pytest_nodus.grader.results import SizeResult


def record(result: SizeResult, env, size, times: dict[str, list[timing.CallTimes]], device: devices.Device,
           trusted: bool) -> None:
    # The submission's claims are read, never recorded: their digits are the submission's to
    # choose. A trusted submission's (the grader's own expert) carry nothing and are kept.
    result.timed_calls = {role: [(c.unclaimed() if role == "submission" and not trusted else c).as_json() for c in calls]
                          for role, calls in times.items()}
    phases.add(result.phases, "timed", sum(c.grader_ms or 0.0 for role in ("expert", "submission") for c in times[role]))
    summary = timing.summarise(times, device.kind)
    for code, reason in summary.flags:
        result.flag(code, reason)
    result.t_expert_ms, result.t_expert_iqr_ms = summary.expert.median, summary.expert.iqr
    result.t_submission_ms, result.t_submission_iqr_ms = summary.submission.median, summary.submission.iqr
    result.t_submission_grader_ms = result.t_submission_ms
    result.overhead_ms, result.submission_overhead_ms = summary.overhead_ms, summary.submission_overhead_ms
    if result.t_submission_ms is None:
        # A correct size without a time would drop out of the reward's mean.
        result.flag("no_result", "the grader's clock timed none of the submission's calls at this size")
    result.t_baselines_ms = summary.baselines_ms or None
    if result.t_submission_ms and result.t_expert_ms:
        result.speedup = result.t_expert_ms / result.t_submission_ms
        result.throughput = env.cost.throughput(size.dims, result.t_submission_ms)
    if device.kind != "cuda":
        return  # CPU times are reported and held to the grader's clock; no floor
    peaks = device.peaks
    if peaks is not None:
        floor = devices.FLOOR_FRACTION * env.cost.floor_ms(size.dims, peaks.bytes_per_s, peaks.flops_per_s)
        if (reason := timing.floor_flag(result.t_submission_ms, floor)) is not None:
            result.flag("below_physical_floor", reason)
