"""A kernel wrong at a public size is shrunk to a small failing size (local checks)."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


def test_wrong_kernel_is_shrunk_to_a_small_failing_size(grade):
    result = grade(REPO / "tests" / "cheats" / "rmsnorm" / "fp8_round_trip.py")
    fuzz = next(s for s in result.document["sizes"] if s["kind"] == "fuzz")
    assert fuzz["status"] == "wrong"
    assert fuzz["dims"]["M"] * fuzz["dims"]["N"] <= 64, fuzz["dims"]  # shrunk from up to 32768 elements
    assert "smallest_failing_size" in {f["code"] for f in result.document["flags"]}

