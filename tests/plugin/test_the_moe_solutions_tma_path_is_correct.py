"""The moe_experts solution's other path (off by default in its ``_config``: weights loaded
by TMA descriptors) grades correct on the CPU, sealed, as its default path does: a path a
tile sweep may switch on must never give wrong gradients."""

from __future__ import annotations

import pytest
from conftest import solution_with_config

pytestmark = pytest.mark.grade

def test_the_tma_path_grades_correct(grade, tmp_path):
    kernel = solution_with_config(tmp_path, "moe_experts", "tma", "device", "dict(base(device), TMA=True)")
    result = grade(kernel, env="moe_experts", sealed=True)
    assert result.outcome.ret == 0, result.text
    assert result.document["status"] == "correct", result.document["flags"]
