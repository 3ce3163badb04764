"""An honest grade reports the claim and the grader's clock, and counts the larger."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


def test_an_honest_grade_reports_both_clocks_and_counts_the_larger(grade):
    result = grade(REPO / "expert" / "rmsnorm" / "solution.py")
    timed = [s for s in result.document["sizes"] if s["kind"] in ("public", "hidden")]
    assert timed and result.document["status"] == "correct", result.document["flags"]
    for size in timed:
        claimed, clock = size["t_submission_claimed_ms"], size["t_submission_grader_ms"]
        assert claimed > 0 and clock is not None and clock >= 0
        assert size["t_submission_ms"] == pytest.approx(max(claimed, clock))

