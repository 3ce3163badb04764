"""The fixed cost taken off the submission's windows is its own where its claims show one
smaller than the expert's (the handoffs between GPU contexts differ from sandbox to
sandbox), and never more than the expert's: a claim can only cost its maker."""

from __future__ import annotations

import pytest
from pytest_nodus.grader import timing
from pytest_nodus.grader.timing import CallTimes

KERNEL_MS = 0.1
EXPERT_FIXED_MS = 0.5
EXPERT = [CallTimes(KERNEL_MS, KERNEL_MS + 0.3, KERNEL_MS + EXPERT_FIXED_MS + d) for d in (-0.001, 0.0, 0.001)]


def same_code_in_a_quicker_sandbox(fixed_ms: float, claim_ms: float = KERNEL_MS) -> list[CallTimes]:
    return [CallTimes(claim_ms, claim_ms + 0.3, KERNEL_MS + fixed_ms + d) for d in (-0.001, 0.0, 0.001)]


def count(submission, recorded=None):
    return timing.summarise({"expert": EXPERT, "submission": submission}, "cuda", recorded)


def test_the_same_kernel_reads_the_same_time_when_its_sandbox_hands_off_quicker():
    quicker = count(same_code_in_a_quicker_sandbox(EXPERT_FIXED_MS - 0.0015))  # 1.5 us, as on the H200
    assert quicker.submission_ms == pytest.approx(quicker.expert.median)
    assert quicker.submission_overhead_ms == pytest.approx(EXPERT_FIXED_MS - 0.0015)


def test_a_shrunk_claim_finds_the_experts_fixed_cost_in_its_way():
    # Claiming half its kernel time would raise the fixed cost believed of it to 0.55 ms.
    shrunk = count(same_code_in_a_quicker_sandbox(EXPERT_FIXED_MS, claim_ms=KERNEL_MS / 2))
    assert shrunk.submission_overhead_ms == pytest.approx(EXPERT_FIXED_MS)
    assert shrunk.submission_ms == pytest.approx(KERNEL_MS)


def test_a_grown_claim_costs_its_maker_at_most_the_range_believed():
    grown = count(same_code_in_a_quicker_sandbox(EXPERT_FIXED_MS, claim_ms=10 * KERNEL_MS))
    most = timing.OWN_OVERHEAD_RANGE * EXPERT_FIXED_MS
    assert grown.submission_ms == pytest.approx(KERNEL_MS + most)


def test_a_record_without_claims_is_counted_with_the_fixed_cost_the_grade_applied():
    live = count(same_code_in_a_quicker_sandbox(EXPERT_FIXED_MS - 0.0015))
    recorded = [c.unclaimed() for c in same_code_in_a_quicker_sandbox(EXPERT_FIXED_MS - 0.0015)]
    assert count(recorded, live.submission_overhead_ms).submission_ms == pytest.approx(live.submission_ms)
    # A record from before the field (schema 2.0) is counted with the expert's, as it was graded.
    assert count(recorded).submission_overhead_ms == pytest.approx(EXPERT_FIXED_MS)
