"""The shipped correct kernels of both environments pass sealed reruns."""

from __future__ import annotations

import json
import math
import jsonschema
import pytest
from conftest import CORRECT, REPO
from pytest_nodus.grader.report import SCHEMA_PATH

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


STARTING = REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"


SCHEMA = json.loads(SCHEMA_PATH.read_text())


@pytest.mark.parametrize("submission", [SOLUTION, STARTING], ids=["solution", "starting_kernel"])
def test_correct_kernels_pass_three_sealed_reruns(grade, xdist, submission):
    result = grade(submission, "--nodus-reruns=3", xdist=xdist, sealed=True)
    document = result.document
    jsonschema.validate(document, SCHEMA)
    assert result.outcome.ret == 0, result.text
    assert document["status"] == "correct", document["flags"]
    assert document["reruns"]["statuses"] == ["correct"] * 3
    # A CPU grade is a correctness check: no reward when correct (reward.paid).
    assert document["reward"] is None and document["reward_basis"] == "cpu_check"
    assert document["reruns"]["rewards"] == [None] * 3 and all(math.isfinite(s) for s in document["reruns"]["speedups"])
    assert document["sealed"] is True and document["seed"] is None
    kinds = {s["kind"] for s in document["sizes"]}
    assert kinds == {"public", "hidden", "fuzz"}
    assert len([s for s in document["sizes"] if s["kind"] == "fuzz"]) == 3
    assert document["trusted"] is False
    assert {s["device"] for s in document["sizes"]} == {"cpu"}  # xdist workers say which device graded
    assert document["removed_fatbins"] == 0  # rmsnorm removes nothing, and the CPU has no fatbins


# Each environment's own correct kernels, sealed, two reruns: the solution (or the expert where
# none is written yet), the starting kernel, and correct styles of its own.
OTHERS = {
    "attention_backward/solution": REPO / "expert" / "attention_backward" / "solution.py",
    "attention_backward/starting_kernel": REPO / "env_suites" / "attention_backward" / "starting_kernel.py",
    "attention_backward/torch_dense": CORRECT / "attention_backward" / "torch_dense.py",
    "chunked_prefill/solution": REPO / "expert" / "chunked_prefill" / "solution.py",
    "chunked_prefill/starting_kernel": REPO / "env_suites" / "chunked_prefill" / "starting_kernel.py",
    "moe_experts/expert": REPO / "expert" / "moe_experts" / "expert_grouped_mm.py",
    "moe_experts/solution": REPO / "expert" / "moe_experts" / "solution.py",
    "moe_experts/starting_kernel": REPO / "env_suites" / "moe_experts" / "starting_kernel.py",
}


@pytest.mark.parametrize("name", sorted(OTHERS))
def test_other_environments_correct_kernels_pass(grade, name):
    result = grade(OTHERS[name], "--nodus-reruns=2", env=name.split("/")[0], sealed=True)
    assert result.document["reruns"]["statuses"] == ["correct"] * 2, result.document["flags"]
