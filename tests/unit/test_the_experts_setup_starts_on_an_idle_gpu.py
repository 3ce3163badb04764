"""The expert's set-up at a size (its first call: autotuning, graph builds, the MoE expert's
eager-or-compiled choice) starts only once the idle probe shows no other context on the GPU
(``gpu_idle.settle``); if the GPU stays held past the wait, the attempts lose the size as
``gpu_contended`` and the set-up never runs on a shared GPU."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_nodus.grader import gpu_idle
from pytest_nodus.grader.grading import Grader
from pytest_nodus.grader.sandbox_process import SandboxFailure

HELD_NS = 2_400_000  # a step the probe reads while another context's kernels run


class Probe:
    """Held for the first ``held`` probes, then idle."""

    def __init__(self, held: int):
        self.held, self.runs = held, 0

    def __call__(self) -> int:
        self.runs += 1
        return HELD_NS if self.runs <= self.held else 0


def test_an_idle_gpu_is_probed_once():
    probe = Probe(held=0)
    assert gpu_idle.settle(probe, limit_s=1.0, pause_s=0.0) == 0
    assert probe.runs == 1


def test_left_over_work_is_waited_out():
    probe = Probe(held=3)
    assert gpu_idle.settle(probe, limit_s=5.0, pause_s=0.001) == 0
    assert probe.runs == 4


def test_a_gpu_held_past_the_wait_returns_the_step():
    probe = Probe(held=10 ** 9)
    assert gpu_idle.settle(probe, limit_s=0.05, pause_s=0.005) == HELD_NS
    assert probe.runs >= 2


def test_the_setup_is_refused_as_gpu_contended(monkeypatch):
    monkeypatch.setattr(gpu_idle, "SETTLE_S", 0.05)
    probe = Probe(held=10 ** 9)
    sandbox = SimpleNamespace(clock=SimpleNamespace(idle_step_ns=probe))
    with pytest.raises(SandboxFailure) as raised:
        Grader._gpu_idle_for_setup(sandbox, "expert")
    assert raised.value.code == "gpu_contended" and "expert's set-up" in raised.value.detail


def test_the_setup_goes_once_the_gpu_is_idle():
    probe = Probe(held=2)
    Grader._gpu_idle_for_setup(SimpleNamespace(clock=SimpleNamespace(idle_step_ns=probe)), "expert")
    assert probe.runs == 3
