"""The timing rules as arithmetic: claims held to the grader's clock, work left running, late marks."""

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


RUN40_ON_TIME = CallTimes(0.1977, 0.5180, 0.6975)  # the mark 0.32 ms before the synchronise's


RUN40_MARKED_LATE = CallTimes(0.5652, 0.6064, 0.7455)  # the mark 0.04 ms before it


def test_the_windows_fixed_cost_is_measured_on_the_expert_and_subtracted():
    expert = calls([1.0, 1.1, 0.9], [1.3, 1.4, 1.2])  # 0.3 ms of copies and flush around each call
    overhead = timing.clock_overhead(expert)
    assert overhead == pytest.approx(0.3)
    assert timing.grader_time_ms(calls([2.0] * 3, [2.3, 2.35, 2.3]), overhead) == pytest.approx(2.0)


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


def test_a_return_marked_late_is_counted_from_the_graders_window_and_the_synchronise():
    latency, overhead = timing.sync_latency(RUN40_EXPERT), timing.clock_overhead(RUN40_EXPERT)
    assert latency == pytest.approx(0.3239, abs=1e-4) and overhead == pytest.approx(0.5023, abs=1e-4)
    assert not timing.marked_late(RUN40_ON_TIME, overhead, "cuda")
    assert timing.call_time(RUN40_ON_TIME, latency, overhead, "cuda") == RUN40_ON_TIME.t_stream_ms
    assert timing.marked_late(RUN40_MARKED_LATE, overhead, "cuda")
    late = timing.call_time(RUN40_MARKED_LATE, latency, overhead, "cuda")
    # t_call - L (0.284 ms): over the window (0.243), far under the late mark (0.565).
    assert late == pytest.approx(RUN40_MARKED_LATE.t_call_ms - latency)
    assert RUN40_MARKED_LATE.grader_ms - overhead < late < 0.3


def test_a_late_mark_never_counts_under_the_window_nor_drops_work_left_running():
    latency, overhead = 0.32, 0.50
    # Marked late with nothing left running: the grader's window, not less.
    quiet = CallTimes(0.54, 0.56, overhead + 0.25)
    assert timing.call_time(quiet, latency, overhead, "cuda") == pytest.approx(0.25)
    # Marked late with 0.4 ms still running on another stream: the synchronise counts it.
    busy = CallTimes(0.60, 1.02, overhead + 0.25)
    assert timing.call_time(busy, latency, overhead, "cuda") == pytest.approx(0.70)


def test_a_window_under_its_fixed_cost_is_not_a_late_mark():
    # H200 run 41: a call that did next to nothing read -0.06 ms on the grader's window.
    tiny = CallTimes(0.0044, 0.3473, 0.6591 - 0.0608)
    assert not timing.marked_late(tiny, 0.6591, "cuda")
    assert timing.call_time(tiny, 0.41, 0.6591, "cuda") == pytest.approx(0.0044)


def test_on_the_cpu_a_late_mark_changes_nothing():
    # Claim and clock are CPU times there and t_call == t_stream, so the rule is moot.
    call = CallTimes(3.0, 3.0, 1.0)
    assert timing.call_time(call, 0.0, 0.1, "cpu") == 3.0


def test_calls_the_clock_never_saw_are_left_out():
    assert timing.grader_time_ms(calls([1.0], [None]), 0.1) is None
    assert timing.clock_overhead(calls([1.0], [None])) is None

