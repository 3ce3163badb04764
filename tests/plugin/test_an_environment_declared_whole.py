"""A new environment needs its declaration, a suite class and an expert: no plugin code.

``tests/envs/axpy`` is the README's example, graded through the real plugin: a correct
kernel passes, one that returns an input is floored.
"""

from __future__ import annotations

import pytest

from conftest import REPO

pytestmark = pytest.mark.grade

SUITE = REPO / "tests" / "envs" / "axpy" / "suite_axpy.py"


def test_a_correct_kernel_passes_and_a_cheat_is_floored(grade, tmp_path):
    correct = tmp_path / "correct.py"
    correct.write_text("def kernel(x, y, alpha):\n    return (alpha * x.float() + y.float()).to(x.dtype)\n")
    document = grade(correct, suite=SUITE).document
    assert document["env"]["name"] == "axpy" and document["status"] == "correct", document["flags"]
    assert {s["kind"] for s in document["sizes"]} == {"public", "fuzz"}
    cheat = tmp_path / "cheat.py"
    cheat.write_text("def kernel(x, y, alpha):\n    return y\n")
    document = grade(cheat, suite=SUITE).document
    assert document["reward"] == -24 and "output_aliases_input" in {f["code"] for f in document["flags"]}
