"""In a batch, the probe for an attempt's leftover GPU work (Grader.charge_leftovers) is queued
right after its call and read once the call's checks are done: where it read the GPU idle the
attempt paid nothing for it; where it did not, the probe run alone decides, as before. A call
that fails its checks is charged all the same."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_nodus.grader import gpu_idle
from pytest_nodus.grader.grading import Grader
from pytest_nodus.grader.sandbox_process import SandboxFailure

HELD_NS = 2_400_000


def _grader() -> Grader:
    grader = Grader.__new__(Grader)  # only the roles and the leftover counts are read
    grader.roles = ["submission", "submission:1"]
    grader.leftovers, grader._loads_charged = {}, set()
    return grader


class _Clock:
    """A clock whose queued probe reads ``beside`` (None: none queued) and whose probes run
    alone read the GPU held for the first ``held_alone`` of them."""

    def __init__(self, beside: int | None, held_alone: int):
        self.beside, self.held_alone, self.alone_runs = beside, held_alone, 0

    def queued_idle_step_ns(self):
        beside, self.beside = self.beside, None
        return beside

    def idle_step_ns(self):
        self.alone_runs += 1
        return HELD_NS if self.alone_runs <= self.held_alone else 0


def _sandbox(clock):
    return SimpleNamespace(pid=4242, clock=clock)


def test_an_idle_reading_beside_the_checks_costs_no_probe_of_its_own():
    clock = _Clock(beside=0, held_alone=10)
    _grader()._charge_probed(_sandbox(clock), "submission:1")
    assert clock.alone_runs == 0


def test_nothing_queued_charges_nothing():
    clock = _Clock(beside=None, held_alone=10)
    grader = _grader()
    grader._charge_probed(_sandbox(clock), "submission:1")
    assert clock.alone_runs == 0 and grader.leftovers == {}


def test_work_seen_beside_the_checks_is_judged_by_the_probe_run_alone():
    ended = _Clock(beside=HELD_NS, held_alone=0)  # it ended during the checks: met no batch-mate
    grader = _grader()
    grader._charge_probed(_sandbox(ended), "submission:1")
    assert ended.alone_runs == 1 and grader.leftovers == {}

    still = _Clock(beside=HELD_NS, held_alone=2)
    grader._charge_probed(_sandbox(still), "submission:1")
    assert still.alone_runs == 3  # still running after the checks: waited out,
    assert grader.leftovers == {"submission:1": 1}  # and counted


def test_a_call_that_fails_its_checks_is_charged_too(monkeypatch):
    monkeypatch.setattr(gpu_idle, "SETTLE_S", 0.05)
    grader = _grader()
    clock = _Clock(beside=HELD_NS, held_alone=10 ** 9)  # work that outlasts the wait

    def failing_call(*args):
        raise SandboxFailure("error", "raised", "the kernel raised ValueError")

    monkeypatch.setattr(grader, "_verified_call", failing_call)
    phases = {}
    with pytest.raises(SandboxFailure) as raised:
        grader.call(None, _sandbox(clock), {}, {}, None, SimpleNamespace(phases=phases), "submission:1", True)
    assert raised.value.code == "pending_work"
    assert isinstance(raised.value.__context__, SandboxFailure) and raised.value.__context__.code == "raised"
    assert phases["rest"] > 0
