"""The rmsnorm solution's chunked path (off by default in its ``_config``: wide rows covered
BLOCK_N columns at a time, in two passes) grades correct on the CPU, sealed, as its default
path does. Switched on for every width with 128-column chunks, so that the CPU sizes take
several chunks and a masked tail: a path a sweep on the H200 may switch on must never give
wrong outputs."""

from __future__ import annotations

import pytest
from conftest import solution_with_config

pytestmark = pytest.mark.grade


def test_the_chunked_path_grades_correct(grade, tmp_path):
    kernel = solution_with_config(tmp_path, "rmsnorm", "chunked", "n",
                                  "dict(base(n), BLOCK_N=128, CHUNKED=True, num_warps=4)")
    result = grade(kernel, env="rmsnorm", sealed=True)
    assert result.outcome.ret == 0, result.text
    assert result.document["status"] == "correct", result.document["flags"]
