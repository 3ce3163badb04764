"""Through the real plugin: an attempt that raises an out-of-memory error in a batch is
flagged as the API's policy reads it, and ``pytest_nodus.grade`` returns its lone grade (its
output is a single grade's), while its batch-mate keeps its batch grade."""

from __future__ import annotations

import pytest
from conftest import REPO

from pytest_nodus import grade
from pytest_nodus.grader import batch_files

pytestmark = pytest.mark.grade

RUNS_OUT = '''
import torch


def kernel(x, weight, eps):
    raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 8.05 GiB")
'''


def test_the_attempt_that_ran_out_is_graded_again_alone(tmp_path):
    runs_out = tmp_path / "runs_out.py"
    runs_out.write_text(RUNS_OUT)
    honest = REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"
    grades = grade(REPO / "env_suites" / "rmsnorm", [honest, runs_out], device="cpu", pytest_args=["-k", "public"])
    assert [g.submission.name for g in grades] == ["starting_kernel.py", "runs_out.py"]
    assert grades[0].correct and "pytest-nodus batch" in grades[0].output
    assert grades[1].status == "error" and batch_files.ran_out_beside_others(grades[1].document)
    assert "pytest-nodus batch" not in grades[1].output  # the lone grade stands
