"""A local grade's printed seed replays its inputs."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_local_seed_reproduces_the_inputs(grade):
    # Same seed, same inputs: the worst error over every call repeats to the last bit.
    first = grade(SOLUTION, "--nodus-seed=1234", "-k", "public")
    second = grade(SOLUTION, "--nodus-seed=1234", "-k", "public")
    other = grade(SOLUTION, "--nodus-seed=99", "-k", "public")
    errors = [[s["error"] for s in g.document["sizes"]] for g in (first, second, other)]
    assert first.document["seed"] == 1234
    assert errors[0] == errors[1]
    assert errors[0] != errors[2]

