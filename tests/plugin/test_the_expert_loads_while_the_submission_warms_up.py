"""The expert's sandbox finishes loading while the submissions make their first, untimed
calls: a size waits for the expert only at the expert's own first call. An expert whose load
takes 5 s beside a submission whose first call takes 5 s leaves the size's start to the
submission's own start, where waiting for the expert before the first round adds the 5 s."""

from __future__ import annotations

import pytest

from conftest import REPO

pytestmark = pytest.mark.grade

SUITE = REPO / "tests" / "envs" / "axpy_slow_expert" / "suite_axpy_slow_expert.py"
LOAD_S = 5.0  # the expert's load (tests/envs/axpy_slow_expert/expert.py), and the first call here
SLOW_FIRST_CALL = '''
import time

import torch

_warm = False


def kernel(x, y, alpha):
    global _warm
    if not _warm:  # a compile's worth of first call
        time.sleep(5.0)
        _warm = True
    return torch.add(y.float(), x.float(), alpha=alpha).to(torch.bfloat16)
'''


def test_the_expert_loads_beside_the_first_call(grade, tmp_path):
    submission = tmp_path / "slow_first_call.py"
    submission.write_text(SLOW_FIRST_CALL)
    document = grade(submission, suite=SUITE).document
    assert document["status"] == "correct", document["flags"]
    first = document["sizes"][0]
    assert first["phases"]["start"] < 0.8 * LOAD_S * 1e3, first["phases"]
