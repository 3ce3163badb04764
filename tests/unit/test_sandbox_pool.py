"""An environment with no expert for the device says so before starting anything."""

from __future__ import annotations

import pytest

from conftest import REPO

SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_an_environment_without_an_expert_for_the_device_says_so():
    import dataclasses

    from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
    from pytest_nodus.grader import devices
    from pytest_nodus.grader.grading import Grader
    from pytest_nodus.grader.sandbox_process import SandboxFailure

    ENVIRONMENT = dataclasses.replace(ATTENTION, profiles={"cpu": ATTENTION.profiles["cpu"]})  # CPU only
    grader = Grader(SOLUTION, devices.Device("cuda", 0, "no GPU needed: fails before any launch", None), grade_seed=1)
    with pytest.raises(SandboxFailure) as failure:
        grader.pool.get(ENVIRONMENT, "expert", ATTENTION.profiles["cuda"].sizes[0])
    assert failure.value.code == "expert_failed" and "has no profile for cuda" in failure.value.detail

