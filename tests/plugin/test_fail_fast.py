"""--nodus-fail-fast stops a grade at its first failed size; what it skipped is counted, not failed."""

from __future__ import annotations

import pytest

from conftest import CHEATS, REPO

pytestmark = pytest.mark.grade


@pytest.mark.parametrize("xdist", [0, 2], ids=["plain", "xdist2"])
def test_a_wrong_kernel_stops_at_its_first_failure(grade, xdist):
    result = grade(CHEATS / "rmsnorm" / "half_rows.py", "--nodus-fail-fast", sealed=True, xdist=xdist)
    document = result.document
    assert document["status"] == "wrong" and document["reward"] == -24
    assert document["not_graded"] >= 1
    # Each worker stops after its own first failure: at most one graded size per worker.
    assert 1 <= len(document["sizes"]) <= max(xdist, 1)
    assert all(s["status"] == "wrong" for s in document["sizes"])
    assert "no_result" not in result.codes  # skipped sizes are not failures of their own


def test_a_correct_kernel_is_graded_whole(grade):
    document = grade(REPO / "expert" / "rmsnorm" / "solution.py", "--nodus-fail-fast", "-k", "public").document
    assert document["status"] == "correct" and document["not_graded"] == 0
    assert [s["kind"] for s in document["sizes"]] == ["public", "public"]
