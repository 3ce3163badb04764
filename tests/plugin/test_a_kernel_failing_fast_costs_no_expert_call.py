"""Under --nodus-fail-fast a submission that fails its first call leaves the rounds before
the expert is started or called: a failing attempt costs no expert time (in a batch, the
expert runs only while some attempt is still in the rounds)."""

from __future__ import annotations

import pytest

from conftest import CHEATS

pytestmark = pytest.mark.grade


def test_the_expert_never_runs_for_a_kernel_that_failed_first(grade):
    document = grade(CHEATS / "rmsnorm" / "half_rows.py", "--nodus-fail-fast", "-k", "public-0").document
    assert document["status"] == "wrong"
    [size] = document["sizes"]
    assert size["calls"] == 1 and size["expert_error"] is None and size["t_expert_ms"] is None
