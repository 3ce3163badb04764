"""A sum whose terms cancel is held to an error the size of its terms (an error scale the
reference returns after its outputs), not to its own vanishing value; a wrong or zero
output still fails wherever the terms did not cancel. moe_experts' dtopk_weights at a single
route is the case: its honest error relative to the value alone exceeds any fixed limit."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch
from env_suites.moe_experts import environment, reference
from pytest_nodus import Contract, Normwise, TensorSpec
from pytest_nodus.grader.correctness import check_outputs

CONTRACT = Contract(inputs=(TensorSpec("x", "float32", ("N",)),), outputs=(TensorSpec("s", "float32", ("N",)),))
TOLERANCE = {"s": Normwise(limit=5e-2, floor_from="terms", floor_fraction=0.5)}
TERMS = torch.full((4,), 10.0, dtype=torch.float64)
REPO = Path(__file__).resolve().parents[2]


def test_an_error_the_size_of_the_terms_passes_where_the_value_cancelled():
    cancelled = torch.full((4,), 1e-3, dtype=torch.float64)
    honest = cancelled + 0.1  # 1% of the terms, 100x the value
    (check,) = check_outputs([honest], [cancelled, TERMS], CONTRACT, TOLERANCE, scales=("terms",))
    assert check.passed and check.error == pytest.approx(0.1 / 5.0)


def test_a_zero_output_fails_where_the_terms_did_not_cancel():
    value = torch.full((4,), 7.0, dtype=torch.float64)
    (check,) = check_outputs([torch.zeros(4)], [value, TERMS], CONTRACT, TOLERANCE, scales=("terms",))
    assert not check.passed and check.error == pytest.approx(1.0)


def test_the_expert_passes_dtopk_weights_at_single_routes_it_fails_by_value_alone():
    spec = importlib.util.spec_from_file_location("expert", REPO / "expert" / "moe_experts" / "expert_grouped_mm.py")
    expert = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(expert)
    names = environment.OUTPUTS + tuple(environment.ENVIRONMENT.error_scales)
    by_value_alone, measured = [], []
    for seed in range(200):
        dims = {"T": 1, "E": 2, "K": 1, "D": 16, "F": 16, "Z": seed % 3}
        inputs = reference.make_inputs(dims, torch.Generator().manual_seed(seed), torch.device("cpu"))
        refs = dict(zip(names, environment.step(inputs)))
        got = expert.kernel(**inputs)[-1]
        by_value_alone.append(Normwise(limit=5e-2).error(got, refs["dtopk_weights"], refs))
        measured.append(environment.ENVIRONMENT.tolerance["dtopk_weights"].error(got, refs["dtopk_weights"], refs))
    assert max(by_value_alone) > 5e-2  # why the scale exists: a fixed limit fails an honest kernel
    assert max(measured) <= environment.ENVIRONMENT.tolerance["dtopk_weights"].limit
