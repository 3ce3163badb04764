"""A submission's claimed times never reach the record, and the count only to its own cost:
every digit of a claim is the submission's to choose, so it could carry a hidden size's dims
to whoever reads the grade. The count is the grader's window less a fixed cost the claims
can only lower (tests/unit/test_own_fixed_cost_only_costs_its_maker.py); otherwise the
claims only trip forged_time and pending_work."""

from __future__ import annotations

import pytest
from pytest_nodus.grader import timing
from pytest_nodus.grader.timing import CallTimes

EXPERT = [CallTimes(1.0, 1.3, 1.5), CallTimes(1.1, 1.4, 1.6), CallTimes(0.9, 1.2, 1.4)]  # fixed cost 0.5 ms


def submission(claims):
    return [CallTimes(t, t + 0.3, w) for t, w in zip(claims, [2.5, 2.6, 2.4])]  # 2.0 ms on the grader's clock


def test_digits_in_the_claims_reach_the_count_only_as_time_the_submission_loses():
    honest = timing.summarise({"expert": EXPERT, "submission": submission([2.0, 2.1, 1.9])}, "cuda")
    # Digits of a hidden dim (7103) written into each claim, all within the clocks' slack:
    # they lower the fixed cost believed of it, so it is counted slower by what it wrote.
    payload = timing.summarise({"expert": EXPERT, "submission": submission([2.0007103, 2.1007103, 1.9007103])}, "cuda")
    assert honest.submission_ms == pytest.approx(2.0)
    assert payload.submission_ms == pytest.approx(2.0007103)
    assert not honest.flags and not payload.flags


def test_a_claim_above_the_clock_buys_nothing():
    inflated = timing.summarise({"expert": EXPERT, "submission": submission([9.0, 9.0, 9.0])}, "cuda")
    assert inflated.submission_ms >= 2.0


def test_a_halved_claim_is_still_flagged_and_the_flag_names_only_the_graders_figure():
    forged = timing.summarise({"expert": EXPERT, "submission": submission([1.07103, 1.07103, 1.07103])}, "cuda")
    (code, reason), = forged.flags
    assert code == "forged_time" and "7103" not in reason and "2.0000" in reason


def test_the_record_of_a_submission_call_holds_the_window_only():
    entry = CallTimes(2.07103, 2.37103, 2.5, contended_ns=0).unclaimed().as_json()
    assert entry == {"t_stream_ms": None, "t_call_ms": None, "window_ms": 2.5, "window_parts_ms": None}
    parts = CallTimes(2.07103, 2.37103, 2.5, parts_ms=(0.4, 0.05)).unclaimed().as_json()
    assert parts["window_parts_ms"] == (0.4, 0.05)  # the grader's own work: its events, not the sandbox's


def test_a_recorded_grade_counted_again_gives_the_same_time_and_raises_no_tripwire():
    live = timing.summarise({"expert": EXPERT, "submission": submission([2.0, 2.1, 1.9])}, "cuda")
    recorded = [CallTimes.from_json(c.unclaimed().as_json()) for c in submission([2.0, 2.1, 1.9])]
    again = timing.summarise({"expert": EXPERT, "submission": recorded}, "cuda", live.submission_overhead_ms)
    assert again.submission_ms == live.submission_ms and again.flags == []
