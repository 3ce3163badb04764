"""The expert's sandbox finishes loading while the submissions make their first, untimed
calls: a size waits for the expert only at the expert's own first call. An expert whose load
takes 3 s beside a submission whose first call takes 3 s costs the size's start well under
those 3 s (it was 3 s more when the expert was waited for before the first round)."""

from __future__ import annotations

import pytest

from conftest import REPO

pytestmark = pytest.mark.grade

SUITE = REPO / "tests" / "envs" / "axpy_slow_expert" / "suite_axpy_slow_expert.py"
SLOW_FIRST_CALL = '''
import time

import torch

_warm = False


def kernel(x, y, alpha):
    global _warm
    if not _warm:  # a compile's worth of first call
        time.sleep(3.0)
        _warm = True
    return torch.add(y.float(), x.float(), alpha=alpha).to(torch.bfloat16)
'''


def test_the_expert_loads_beside_the_first_call(grade, tmp_path):
    submission = tmp_path / "slow_first_call.py"
    submission.write_text(SLOW_FIRST_CALL)
    document = grade(submission, suite=SUITE).document
    assert document["status"] == "correct", document["flags"]
    first = document["sizes"][0]
    assert first["phases"]["start"] < 2000, first["phases"]
