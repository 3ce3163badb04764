"""The compiled rmsnorm expert builds, at a shape's first call, the graph of every eps the
environment draws: dynamo guards on the float's value, and a graph built later is a host
stall of 0.5-1 s inside a call (a timed one, as often as not)."""

from __future__ import annotations

import importlib.util

import torch

from conftest import REPO
from env_suites.rmsnorm import environment


def _expert():
    spec = importlib.util.spec_from_file_location("rmsnorm_expert_eps", REPO / "expert" / "rmsnorm" / "expert_cuda.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_expert_knows_every_eps_the_environment_draws():
    assert set(_expert().EPS_CHOICES) == set(environment.EPS_CHOICES)


def test_no_eps_compiles_after_a_shapes_first_call(monkeypatch):
    expert = _expert()
    calls = []
    monkeypatch.setattr(expert, "_rms_norm", lambda x, shape, w, eps: calls.append(eps) or x)
    x, w = torch.ones(4, 8, dtype=torch.bfloat16), torch.ones(8, dtype=torch.bfloat16)
    expert.kernel(x, w, 1e-6)
    assert sorted(calls) == sorted(environment.EPS_CHOICES)  # every graph, at the first call
    calls.clear()
    expert.kernel(x, w, 1e-5)
    expert.kernel(x, w, 1e-6)
    assert calls == [1e-5, 1e-6]  # later calls run only their own
