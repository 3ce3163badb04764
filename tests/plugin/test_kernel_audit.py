"""The run-time kernel audit: a forbidden op is found however reached, a correct kernel passes, --nodus-trusted waives only that."""

from __future__ import annotations

import pytest
from conftest import CHEATS
from pytest_nodus.grader.reward import FLOOR

pytestmark = pytest.mark.grade


def test_forbidden_op_is_found_at_run_time_however_reached(grade, xdist):
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    result = grade(CHEATS / "rmsnorm_audit" / "torch_rms_norm_fallback.py", suite=suite, xdist=xdist)
    assert result.document["reward"] == FLOOR
    assert result.document["status"] == "flagged"
    assert "forbidden_op" in result.codes, result.document["flags"]
    assert result.document["env"]["name"] == "rmsnorm_audit"


def test_audit_passes_a_correct_kernel(grade):
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    result = grade(CHEATS.parent / "correct" / "rmsnorm" / "torch_ops.py", suite=suite)
    assert result.document["status"] == "correct", result.document["flags"]
    assert any(s["kernels"] is None for s in result.document["sizes"])  # CPU: ops only, no device kernels


def test_trusted_grade_waives_forbidden_kernels_and_nothing_else(grade):
    """--nodus-trusted (calibration: the expert graded against itself) records forbidden
    kernels instead of scoring them, says so in the JSON and the report, and still floors
    every other cheat."""
    suite = CHEATS.parent / "envs" / "rmsnorm_audit" / "suite_rmsnorm_audit.py"
    trusted = grade(CHEATS / "rmsnorm_audit" / "torch_rms_norm_fallback.py", "--nodus-trusted", suite=suite)
    assert trusted.document["trusted"] is True
    assert trusted.document["status"] == "correct", trusted.document["flags"]
    assert trusted.document["reward"] is None  # correct on the CPU: a check, no reward
    waived = [w for s in trusted.document["sizes"] for w in (s["waived_flags"] or [])]
    assert waived and {w["code"] for w in waived} == {"forbidden_op"}
    assert "TRUSTED" in trusted.text and "waived (trusted) forbidden_op" in trusted.text
    mutating = grade(CHEATS / "rmsnorm" / "mutate_input.py", "--nodus-trusted", sealed=True)
    assert mutating.document["reward"] == FLOOR and "input_mutated" in mutating.codes

