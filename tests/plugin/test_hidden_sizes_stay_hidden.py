"""No hidden dim reaches the terminal report or the JSON."""

from __future__ import annotations

import json
import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_hidden_sizes_stay_hidden(grade):
    result = grade(SOLUTION, sealed=True)
    hidden = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    assert hidden and all(s["dims"] is None and s["id"].startswith("hidden-") for s in hidden)
    sealed = json.loads((REPO / "sealed_fixtures" / "rmsnorm.json").read_text())["hidden_sizes"]["cpu"]
    for dims in sealed:
        label = "x".join(f"{k}{v}" for k, v in dims.items())
        assert label not in result.text

