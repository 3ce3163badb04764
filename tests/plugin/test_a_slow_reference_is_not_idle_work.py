"""A helper thread that wakes now and then is not background work, however long the grader
takes to verify a call: the idle count covers the settle after a return, not the reference."""

from __future__ import annotations

import pytest
from conftest import CORRECT, REPO

pytestmark = pytest.mark.grade

SUITE = REPO / "tests" / "envs" / "rmsnorm_slow_reference" / "suite_rmsnorm_slow_reference.py"


def test_a_ticking_helper_thread_passes_beside_a_slow_reference(grade):
    result = grade(CORRECT / "rmsnorm" / "helper_thread_ticks.py", suite=SUITE)
    assert result.document["status"] == "correct", result.document["flags"]
    # Each timed size's count is a settle's worth of its wakes, well under the allowance.
    counted = [s["idle_work_ms"] for s in result.document["sizes"] if s.get("idle_work_ms") is not None]
    assert counted and max(counted) < 1.0, counted
