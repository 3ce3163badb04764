"""A size's result names the path of a cross-checked reference that answered its calls (the
JSON's ``reference_paths``), so a grade says which fp32 reference its verdicts stand on; a
reference that is not cross-checked leaves it null."""

from __future__ import annotations

import pytest
import torch

from pytest_nodus.grader import inputs
from pytest_nodus.grader.exact_products import CROSS_CHECK_LIMIT, cross_checked
from pytest_nodus.grader.results import SizeResult


class Env:
    def __init__(self, reference):
        self.reference = reference


def plain(x):
    return x * 2


def test_the_path_that_answered_is_recorded_per_size():
    agreeing = cross_checked(lambda x: x * 2, plain, "test")
    result = SizeResult("public-0", "public", 0, {})
    x = torch.randn(4, 4)
    inputs.reference(Env(lambda fresh: agreeing(fresh["x"])), {"x": x}, "cpu", result)
    assert result.reference_paths == ["tensor_cores"]  # the first call answers with the checked fast path
    assert result.as_json()["reference_paths"] == ["tensor_cores"]


def test_a_disagreeing_fast_path_records_the_plain_one():
    disagreeing = cross_checked(lambda x: x * 2 * (1 + 10 * CROSS_CHECK_LIMIT), plain, "test")
    result = SizeResult("hidden-0", "hidden", 0, {})
    fresh = {"x": torch.randn(4, 4) + 3}
    with pytest.warns(RuntimeWarning):
        inputs.reference(Env(lambda f: disagreeing(f["x"])), fresh, "cpu", result)
    inputs.reference(Env(lambda f: disagreeing(f["x"])), fresh, "cpu", result)
    assert result.reference_paths == ["plain"]


def test_a_reference_that_is_not_cross_checked_leaves_it_null():
    result = SizeResult("public-0", "public", 0, {})
    inputs.reference(Env(lambda fresh: plain(fresh["x"])), {"x": torch.ones(2)}, "cpu", result)
    assert result.reference_paths is None
    assert result.as_json()["reference_paths"] is None
