"""Every shipped environment is declared whole: a profile per device with an expert that
exists, sizes over the domain's dims, a tolerance per output, and derived variants that change
only what they name."""

from __future__ import annotations

import pytest

from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
from env_suites.chunked_prefill.environment import ENVIRONMENT as CHUNKED_PREFILL
from env_suites.moe_experts.environment import ENVIRONMENT as MOE_EXPERTS
from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM

ENVIRONMENTS = [RMSNORM, ATTENTION, CHUNKED_PREFILL, MOE_EXPERTS]


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_each_profile_is_complete(env):
    assert set(env.profiles) == {"cuda", "cpu"}
    for profile in env.profiles.values():
        assert profile.expert.is_file()
        # Public sizes name every dim of the domain (they may lie past the fuzzed domain's
        # bounds: a CPU domain is kept small for the interpreter).
        assert profile.sizes and all(set(d) == set(profile.domain.dims) for d in profile.sizes)
        assert profile.call_timeout_s > 0 and profile.fuzz_examples > 0
        assert all(path.is_file() for path in profile.baselines.values())
    assert set(env.tolerance) == {o.name for o in env.contract.outputs}
    assert env.cost.unit in ("GB/s", "TF/s")


def test_a_derived_environment_changes_what_it_names_only():
    variant = RMSNORM.derive("variant", call_timeout_s=5.0, profiles={"cpu": {"timing": (1, 2)}})
    assert variant.name == "variant" and variant.contract is RMSNORM.contract
    assert variant.profile("cuda").call_timeout_s == variant.profile("cpu").call_timeout_s == 5.0
    assert variant.profile("cpu").timing == (1, 2) and variant.profile("cuda").timing is None
    assert variant.profile("cpu").sizes == RMSNORM.profile("cpu").sizes


def test_an_unknown_device_kind_is_an_error():
    with pytest.raises(ValueError, match="no profile for device kind 'tpu'"):
        RMSNORM.profile("tpu")


@pytest.mark.parametrize("env", ENVIRONMENTS, ids=lambda e: e.name)
def test_every_error_floor_names_an_output_or_an_error_scale(env):
    named = {o.name for o in env.contract.outputs} | set(env.error_scales)
    assert all(getattr(tol, "floor_from", None) in named | {None} for tol in env.tolerance.values())
    assert not set(env.error_scales) & {o.name for o in env.contract.outputs}
