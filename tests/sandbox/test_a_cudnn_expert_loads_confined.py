"""A cuDNN expert graded as a (trusted) submission runs confined, where the project's files
are unreadable: it must load there, its plan helper (pytest_nodus/trusted/cudnn_plans.py)
importable, with no plan store named to it."""

from __future__ import annotations

import pytest

from conftest import REPO
from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
from env_suites.chunked_prefill.environment import ENVIRONMENT as PREFILL
from pytest_nodus.grader import devices
from pytest_nodus.grader.sandbox_pool import SandboxPool

CPU = devices.Device("cpu", None, "cpu", None)


@pytest.mark.parametrize("env", [PREFILL, ATTENTION], ids=lambda env: env.name)
def test_the_expert_file_loads_as_a_confined_submission(env):
    pool = SandboxPool(REPO / "expert" / env.name / "expert_cuda.py", CPU, audit=True, expert_cache=None,
                       trusted=True)
    try:
        sandbox = pool.get(env, "submission", env.profile("cpu").sizes[0])
        assert sandbox.alive
        assert any(level.startswith("landlock") for level in sandbox.isolation)  # confined: the project unreadable
    finally:
        pool.close()
