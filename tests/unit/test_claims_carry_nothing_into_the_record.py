"""A submission's claimed times never reach the record nor the count: every digit of a claim
is the submission's to choose, so it could carry a hidden size's dims to whoever reads the
grade. The count is the grader's window; the claims only trip forged_time and pending_work."""

from __future__ import annotations

import pytest
from pytest_nodus.grader import timing
from pytest_nodus.grader.timing import CallTimes

EXPERT = [CallTimes(1.0, 1.3, 1.5), CallTimes(1.1, 1.4, 1.6), CallTimes(0.9, 1.2, 1.4)]  # fixed cost 0.5 ms


def submission(claims):
    return [CallTimes(t, t + 0.3, w) for t, w in zip(claims, [2.5, 2.6, 2.4])]  # 2.0 ms on the grader's clock


def test_the_count_is_the_same_whatever_digits_the_claims_hold():
    honest = timing.summarise({"expert": EXPERT, "submission": submission([2.0, 2.1, 1.9])}, "cuda")
    # Digits of a hidden dim (7103) written into each claim, all within the clocks' slack.
    payload = timing.summarise({"expert": EXPERT, "submission": submission([2.07103, 2.17103, 1.97103])}, "cuda")
    assert honest.submission_ms == payload.submission_ms == pytest.approx(2.0)
    assert honest.submission.iqr == payload.submission.iqr
    assert not honest.flags and not payload.flags


def test_a_claim_above_the_clock_buys_nothing_and_costs_nothing():
    inflated = timing.summarise({"expert": EXPERT, "submission": submission([9.0, 9.0, 9.0])}, "cuda")
    assert inflated.submission_ms == pytest.approx(2.0)


def test_a_halved_claim_is_still_flagged_and_the_flag_names_only_the_graders_figure():
    forged = timing.summarise({"expert": EXPERT, "submission": submission([1.07103, 1.07103, 1.07103])}, "cuda")
    (code, reason), = forged.flags
    assert code == "forged_time" and "7103" not in reason and "2.0000" in reason


def test_the_record_of_a_submission_call_holds_the_window_only():
    entry = CallTimes(2.07103, 2.37103, 2.5, contended_ns=0).unclaimed().as_json()
    assert entry == {"t_stream_ms": None, "t_call_ms": None, "window_ms": 2.5}


def test_a_recorded_grade_counted_again_gives_the_same_time_and_raises_no_tripwire():
    live = timing.summarise({"expert": EXPERT, "submission": submission([2.0, 2.1, 1.9])}, "cuda")
    recorded = [CallTimes.from_json(c.unclaimed().as_json()) for c in submission([2.0, 2.1, 1.9])]
    again = timing.summarise({"expert": EXPERT, "submission": recorded}, "cuda")
    assert again.submission_ms == live.submission_ms and again.flags == []
