"""A trusted sandbox spawned ahead with ``preload`` (grader/standby.py) imports those modules
while it waits for its launch: a file that imports them then loads at once, and the time is
the ``start_preload`` stage, before the launch. A submission's sandbox is never given any."""

from __future__ import annotations

import time

import pytest

from pytest_nodus.grader import standby
from pytest_nodus.grader.sandbox_process import Sandbox
from pytest_nodus.grader.sandbox_spawn import spawn

COMPILING_EXPERT = '''
import torch
import torch._dynamo  # what a torch.compile expert's load imports (expert/rmsnorm/expert_cuda.py)
import torch._inductor.compile_fx


def kernel(x):
    return x.clone()
'''


def _stages(tmp_path, preload: tuple[str, ...]) -> dict:
    spawned = spawn("expert", None, preload)
    time.sleep(12.0)  # the grader's start-up: long enough for the imports on a loaded 2-core machine
    kernel = tmp_path / f"expert_{len(preload)}.py"
    kernel.write_text(COMPILING_EXPERT)
    sandbox = Sandbox(kernel, "expert", "cpu", spawned=spawned)
    try:
        sandbox.start(1 << 20)
        return sandbox.stages_ms
    finally:
        sandbox.close()


def test_the_preloaded_modules_leave_the_load(tmp_path):
    cold = _stages(tmp_path, ())
    warm = _stages(tmp_path, standby.TRUSTED_PRELOAD)
    assert cold["start_preload"] < 50  # nothing to import: the mark only
    assert warm["start_preload"] > 1000, warm  # dynamo and inductor, before the launch
    # What the file's load still imports: a fraction of the same imports without the preload.
    assert warm["start_load"] < 0.3 * cold["start_load"], (cold, warm)


def test_a_submission_is_never_preloaded():
    assert standby.preload("submission", "cuda") == ()
    assert standby.preload("expert", "cpu") == ()
    assert standby.preload("expert", "cuda") == standby.TRUSTED_PRELOAD
    with pytest.raises(ValueError):
        spawn("submission", None, standby.TRUSTED_PRELOAD)
