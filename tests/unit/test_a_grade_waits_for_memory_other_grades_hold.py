"""A size whose grader runs out of GPU memory waits for other grades to give theirs back and
is graded again; only past --nodus-gpu-wait is it the grader's out of memory.

Several grades on one GPU (an RL pipeline's batch) can together hold more than it has; the
size that meets the shortage is not the submission's failure and, given time, runs whole.
"""

from __future__ import annotations

import torch

from pytest_nodus.grader import devices, gpu_memory, grading
from pytest_nodus.grader.environment import Size
from env_suites.rmsnorm.environment import ENVIRONMENT


def _grader(monkeypatch, failures: int, wait_s: float):
    grader = grading.Grader.__new__(grading.Grader)
    grader.device, grader.gpu_wait_s = devices.Device("cpu", None, "cpu", None), wait_s
    grader.roles = grader.active = ["submission"]
    attempts = []

    def grade_once(env, size, label, results):
        attempts.append(results["submission"])
        if len(attempts) <= failures:
            raise torch.OutOfMemoryError("CUDA out of memory")

    slept = []
    monkeypatch.setattr(grader, "_grade_size", grade_once, raising=False)
    monkeypatch.setattr(gpu_memory.time, "sleep", slept.append)
    return grader, attempts, slept


SIZE = Size("public", 0, {"M": 4, "N": 8})


def test_the_size_is_graded_again_once_memory_is_back(monkeypatch):
    grader, attempts, slept = _grader(monkeypatch, failures=2, wait_s=1800)
    [result] = grader.grade_size(ENVIRONMENT, SIZE, "label")
    assert len(attempts) == 3 and result is attempts[-1]
    assert result.flags == [] and slept == [5.0, 10.0]
    assert result.phases["gpu_wait"] == 15_000.0


def test_past_the_wait_it_is_the_graders_out_of_memory(monkeypatch):
    grader, attempts, slept = _grader(monkeypatch, failures=100, wait_s=60)
    [result] = grader.grade_size(ENVIRONMENT, SIZE, "label")
    assert sum(slept) <= 60 and slept == [5.0, 10.0, 20.0]
    assert [flag["code"] for flag in result.flags] == ["grader_out_of_memory"]
