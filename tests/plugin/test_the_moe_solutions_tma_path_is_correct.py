"""The moe_experts solution's other path (weights loaded by TMA descriptors, ``TMA`` in its
``_config``; off by default) grades correct on the CPU, sealed, as its default path does: a
path a tile sweep may switch on must never be one that gives wrong gradients."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

SWITCH_ON = "\n_config = (lambda base: lambda device: dict(base(device), TMA=True))(_config)\n"


def test_the_tma_path_grades_correct(grade, tmp_path):
    kernel = tmp_path / "solution_tma.py"
    kernel.write_text((REPO / "expert" / "moe_experts" / "solution.py").read_text() + SWITCH_ON)
    result = grade(kernel, env="moe_experts", sealed=True)
    assert result.outcome.ret == 0, result.text
    assert result.document["status"] == "correct", result.document["flags"]
