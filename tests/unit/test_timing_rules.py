"""The timing rules as arithmetic: every role on the grader's clock, claims as tripwires."""

from __future__ import annotations

import pytest
from pytest_nodus.grader import timing
from pytest_nodus.grader.timing import CallTimes


def calls(claims, windows):
    return [CallTimes(t, t, w) for t, w in zip(claims, windows)]


# H200 run 40, the attention solution at hidden-1 (T16384 Hq8/1 D128 B64 W128), rerun 1:
# (t_stream, t_call, window) in ms. The expert's calls fix the sync latency L (0.32 ms) and
# the window's fixed cost (0.50 ms).
RUN40_EXPERT = [CallTimes(0.3521, 0.6758, 0.8542), CallTimes(0.3483, 0.6696, 0.8489),
                CallTimes(0.3698, 0.6939, 0.8723), CallTimes(0.4754, 0.8004, 0.9813)]
RUN40_MARKED_LATE = CallTimes(0.5652, 0.6064, 0.7455)  # the return stamped 0.04 ms before the synchronise's


def test_the_windows_fixed_cost_is_measured_on_the_expert_and_subtracted():
    expert = calls([1.0, 1.1, 0.9], [1.3, 1.4, 1.2])  # 0.3 ms of copies and flush around each call
    overhead = timing.clock_overhead(expert)
    assert overhead == pytest.approx(0.3)
    assert timing.on_clock(calls([2.0] * 3, [2.3, 2.35, 2.3]), overhead).median == pytest.approx(2.0)


def test_expert_and_submission_are_read_the_same_way():
    """The expert graded as its own submission reads as fast as itself, whatever its claims say."""
    summary = timing.summarise({"expert": RUN40_EXPERT, "submission": RUN40_EXPERT}, "cuda")
    assert summary.expert.median == summary.submission_ms
    assert not summary.flags


def test_a_return_marked_late_costs_nothing():
    """A late mark (t_stream beyond the window) reads as the window says."""
    overhead = timing.clock_overhead(RUN40_EXPERT)
    assert overhead == pytest.approx(0.5023, abs=1e-4)
    late = timing.on_clock([RUN40_MARKED_LATE], overhead).median
    assert late == pytest.approx(RUN40_MARKED_LATE.grader_ms - overhead) and late < 0.25 < RUN40_MARKED_LATE.t_stream_ms


@pytest.mark.parametrize("kind", ["cuda", "cpu"])
def test_a_claim_at_the_clock_passes_and_a_halved_one_is_forged(kind):
    assert timing.forged_time_flag(10.0, 10.0, kind) is None
    assert timing.forged_time_flag(10.0, 9.0, kind) is None  # a clock under the claim is never a forgery
    assert "forged" in timing.forged_time_flag(5.0, 10.0, kind)


def test_gpu_slack_is_the_larger_of_absolute_and_relative():
    slack_abs, slack_rel = timing.CLOCK_SLACK["cuda"]
    claim = 0.02
    assert timing.forged_time_flag(claim, claim * (1 + slack_rel) + slack_abs * 0.99, "cuda") is None
    assert timing.forged_time_flag(claim, claim * (1 + slack_rel) + slack_abs * 1.01, "cuda") is not None


def test_work_left_running_is_flagged_beyond_the_experts_synchronise_latency():
    latency = timing.sync_latency(RUN40_EXPERT)
    assert latency == pytest.approx(0.3239, abs=1e-4)
    honest = [CallTimes(0.20, 0.20 + latency, 0.70)] * 3
    busy = [CallTimes(0.20, 0.20 + latency + 0.4, 0.70)] * 3  # 0.4 ms still running on another stream
    assert timing.pending_work_flag(honest, latency) is None
    assert timing.pending_work_flag(busy, latency) is not None


def test_a_window_under_its_fixed_cost_reads_zero():
    # H200 run 41: a call that did next to nothing read -0.06 ms on the grader's window.
    assert timing.on_clock([CallTimes(0.0044, 0.3473, 0.6591 - 0.0608)], 0.6591).median == 0.0


def test_calls_the_clock_never_saw_are_left_out():
    assert timing.on_clock(calls([1.0], [None]), 0.1).median is None
    assert timing.clock_overhead(calls([1.0], [None])) is None


def test_a_baseline_is_counted_less_its_own_fixed_cost():
    """A baseline's window holds no input copies: less the expert's fixed cost it would read
    as nothing; less its own it reads as its own time."""
    expert = [CallTimes(1.0, 1.0, 1.5)] * 5  # fixed cost 0.5 ms
    baseline = [CallTimes(0.2, 0.2, 0.3)] * 5  # fixed cost 0.1 ms
    submission = [CallTimes(1.0, 1.0, 1.5)] * 5
    summary = timing.summarise({"expert": expert, "submission": submission, "baseline:fast": baseline}, "cuda")
    assert summary.baselines_ms["fast"] == pytest.approx(0.2)
