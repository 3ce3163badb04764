"""A sandbox the pool launched ahead is the one a later get returns, started side by side
with the others; a launched file that does not load fails at that get as any start would;
closing the pool ends launched sandboxes nobody asked for yet."""

from __future__ import annotations

import time

import pytest

from conftest import REPO
from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM
from pytest_nodus.grader import devices
from pytest_nodus.grader.sandbox_pool import SandboxPool
from pytest_nodus.grader.sandbox_process import SandboxFailure

CPU = devices.Device("cpu", None, "cpu", None)
DIMS = RMSNORM.profile("cpu").sizes[0]
SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def _pool(submission=SOLUTION) -> SandboxPool:
    return SandboxPool(submission, CPU, audit=True, expert_cache=None, trusted=False)


def test_a_launched_sandbox_is_the_one_get_returns():
    pool = _pool()
    try:
        pool.launch(RMSNORM, "expert", DIMS)
        launched = pool._launched[("expert", RMSNORM.name)].process
        pool.get(RMSNORM, "submission", DIMS)  # the expert starts meanwhile
        expert = pool.get(RMSNORM, "expert", DIMS)
        assert expert.process is launched and expert.alive
        assert pool.get(RMSNORM, "expert", DIMS) is expert  # kept for the grade
    finally:
        pool.close()


def test_a_launched_file_that_does_not_load_fails_at_get(tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def kernel(x, weight, eps)\n    return x\n")
    pool = _pool(broken)
    try:
        pool.launch(RMSNORM, "submission", DIMS)
        for _ in range(2):  # and is remembered, not started again
            with pytest.raises(SandboxFailure) as failure:
                pool.get(RMSNORM, "submission", DIMS)
            assert failure.value.code == "load_failed"
    finally:
        pool.close()


def test_closing_the_pool_ends_launched_sandboxes():
    pool = _pool()
    pool.launch(RMSNORM, "expert", DIMS)
    process = pool._launched[("expert", RMSNORM.name)].process
    pool.close()
    deadline = time.monotonic() + 10
    while process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert process.poll() is not None and not pool._launched
