"""In a batch, GPU work an attempt leaves running after its load, a call or a size's finish
(its sandbox frozen) is waited out right there, before any batch-mate's call can meet it, and
is charged to that attempt: the third time, or work that outlasts the wait, takes it out as
``pending_work``. A call after which the GPU is idle costs one probe and changes nothing; a
lone attempt is not probed."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_nodus.grader import gpu_idle, grading
from pytest_nodus.grader.grading import Grader
from pytest_nodus.grader.sandbox_process import SandboxFailure

HELD_NS = 2_400_000


def _grader() -> Grader:
    grader = Grader.__new__(Grader)  # only the roles and the leftover counts are read
    grader.roles = ["submission", "submission:1", "submission:2"]
    grader.leftovers, grader._loads_charged = {}, set()
    return grader


def _sandbox(held_probes: int):
    probes = {"runs": 0}

    def step_ns() -> int:
        probes["runs"] += 1
        return HELD_NS if probes["runs"] <= held_probes else 0

    return SimpleNamespace(pid=4242, clock=SimpleNamespace(idle_step_ns=step_ns)), probes


def test_an_idle_gpu_after_the_call_costs_one_probe():
    grader = _grader()
    sandbox, probes = _sandbox(held_probes=0)
    grader.charge_leftovers(sandbox, "submission:1")
    assert probes["runs"] == 1 and grader.leftovers == {}


def test_short_leftovers_are_waited_out_then_the_third_is_flagged():
    grader = _grader()
    for _ in range(grading.LEFTOVER_CALLS - 1):
        sandbox, probes = _sandbox(held_probes=2)
        grader.charge_leftovers(sandbox, "submission:1")
        assert probes["runs"] == 3  # waited until the probe read the GPU idle
    sandbox, _ = _sandbox(held_probes=2)
    with pytest.raises(SandboxFailure) as raised:
        grader.charge_leftovers(sandbox, "submission:1")
    assert raised.value.code == "pending_work" and raised.value.status == "flagged"
    assert grader.leftovers == {"submission:1": grading.LEFTOVER_CALLS}


def test_leftovers_are_counted_per_attempt():
    grader = _grader()
    for role in ("submission", "submission:1", "submission:2"):
        grader.charge_leftovers(_sandbox(held_probes=1)[0], role)
    assert grader.leftovers == {"submission": 1, "submission:1": 1, "submission:2": 1}


def test_work_that_outlasts_the_wait_is_flagged_at_once(monkeypatch):
    monkeypatch.setattr(gpu_idle, "SETTLE_S", 0.05)
    sandbox, _ = _sandbox(held_probes=10 ** 9)
    with pytest.raises(SandboxFailure) as raised:
        _grader().charge_leftovers(sandbox, "submission")
    assert raised.value.code == "pending_work"


def test_a_lone_attempt_is_not_probed():
    grader = _grader()
    grader.roles = ["submission"]
    sandbox, probes = _sandbox(held_probes=10 ** 9)
    grader.charge_leftovers(sandbox, "submission")
    assert probes["runs"] == 0


def test_a_load_is_charged_once_per_sandbox_process():
    grader = _grader()
    sandbox, probes = _sandbox(held_probes=1)
    grader.charge_load(sandbox, "submission:1")
    grader.charge_load(sandbox, "submission:1")  # the same process at its next size: not loaded again
    assert probes["runs"] == 2 and grader.leftovers == {"submission:1": 1}
