"""Every sealed fixture loads for every device kind its environment has: a hidden size outside
the published domain stops the grade before any size runs, and on a kind this machine does not
have (the GPU's sizes, here) nothing else would notice until the grade ran there."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_nodus.grader.api import installed_environments
from pytest_nodus.grader.environment import load_hidden_sizes

SEALED = Path(__file__).resolve().parents[2] / "sealed_fixtures"
ENVIRONMENTS = installed_environments()


@pytest.mark.parametrize("name", sorted(ENVIRONMENTS))
def test_hidden_sizes_load_on_every_device_kind(name):
    env = ENVIRONMENTS[name].load()
    for kind in env.profiles:
        sizes = load_hidden_sizes(SEALED, env, kind)
        assert all(set(dims) == set(env.profile(kind).domain.dims) for dims in sizes)
