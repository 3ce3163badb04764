"""Context baselines are timed beside the expert when asked for, and never the verdict."""

from __future__ import annotations

import json
import jsonschema
import pytest
from conftest import REPO
from pytest_nodus.grader.report import SCHEMA_PATH

from tests.envs.rmsnorm_baselines.baseline_prepared import PREPARE_SPIN_S

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


SCHEMA = json.loads(SCHEMA_PATH.read_text())


def test_baselines_are_context_never_the_verdict(grade, tmp_path):
    suite = REPO / "tests" / "envs" / "rmsnorm_baselines" / "suite_rmsnorm_baselines.py"
    sealed = json.loads((REPO / "sealed_fixtures" / "rmsnorm.json").read_text())  # rmsnorm's hidden sizes
    (tmp_path / "rmsnorm_baselines.json").write_text(json.dumps({**sealed, "environment": "rmsnorm_baselines"}))
    result = grade(SOLUTION, "--nodus-baselines", "-k", "public-0 or hidden-0", f"--nodus-sealed={tmp_path}",
                   suite=suite)
    assert result.document["status"] == "correct", result.document["flags"]
    (size,) = [s for s in result.document["sizes"] if s["kind"] == "public"]
    (hidden,) = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    # A baseline that failed is not tried again in the same grade (a hang would cost a time limit per size).
    assert hidden["baseline_notes"]["broken"] == "failed at an earlier size of this grade"
    assert set(hidden["t_baselines_ms"]) == {"eager", "prepared"}
    assert set(size["t_baselines_ms"]) == {"eager", "prepared"}
    assert all(t > 0 for t in size["t_baselines_ms"].values())
    # prepare() ran before the clock: a clock that took it in would read its whole spin at every call.
    spin_ms = PREPARE_SPIN_S * 1e3
    assert size["t_baselines_ms"]["prepared"] < spin_ms / 2 and hidden["t_baselines_ms"]["prepared"] < spin_ms / 2
    assert size["baseline_errors"]["eager"] < 1.0 and size["baseline_errors"]["prepared"] < 1.0
    assert "this baseline is broken at shape" in size["baseline_notes"]["broken"]
    assert "baseline at public-0" in result.text
    assert size["calls"] == 3  # the environment's own timing_rounds: 1 warm-up + 2 timed
    jsonschema.validate(result.document, SCHEMA)

    # A baseline's message at a hidden size keeps the size hidden, like any flag.
    result = grade(SOLUTION, "--nodus-baselines", "-k", "hidden-1", f"--nodus-sealed={tmp_path}", suite=suite)
    (hidden,) = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    note = hidden["baseline_notes"]["broken"]
    assert "this baseline is broken at shape" in note
    dims = sealed["hidden_sizes"]["cpu"][1]
    assert not any(str(v) in note for v in dims.values() if v >= 10), note


def test_baselines_are_off_unless_asked_for(grade):
    suite = REPO / "tests" / "envs" / "rmsnorm_baselines" / "suite_rmsnorm_baselines.py"
    result = grade(SOLUTION, "-k", "public-0", suite=suite)
    assert result.document["status"] == "correct"
    assert all(s["t_baselines_ms"] is None and s["baseline_notes"] is None for s in result.document["sizes"])

