"""An honest grade is counted on the grader's clock, and records none of the sandbox's claims."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


def test_an_honest_grade_is_counted_on_the_graders_clock_and_records_no_claim(grade):
    result = grade(REPO / "expert" / "rmsnorm" / "solution.py")
    timed = [s for s in result.document["sizes"] if s["kind"] in ("public", "hidden")]
    assert timed and result.document["status"] == "correct", result.document["flags"]
    for size in timed:
        assert "t_submission_claimed_ms" not in size
        assert size["t_submission_ms"] is not None and size["t_submission_ms"] >= 0
        assert size["t_submission_ms"] == size["t_submission_grader_ms"]
        assert all(c["t_stream_ms"] is None for c in size["timed_calls"]["submission"])
