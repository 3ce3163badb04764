"""An output that misses its limit passes within twice the error of the environment's rounded
reference on the same inputs, and never more: the widening is asked for only on a miss,
follows the rounded reference's own error, and a broken rounded reference widens nothing."""

from __future__ import annotations

import math

import torch
from pytest_nodus import Contract, Normwise, TensorSpec
from pytest_nodus.grader.correctness import ROUNDED_FACTOR, check_outputs

CONTRACT = Contract(inputs=(TensorSpec("x", "float32", ("N",)),), outputs=(TensorSpec("y", "float32", ("N",)),))
TOLERANCE = {"y": Normwise(limit=1e-2)}
REFERENCE = torch.ones(100, dtype=torch.float64)


def off_by(relative: float) -> torch.Tensor:
    return REFERENCE * (1 + relative)


def test_a_pass_never_asks_for_the_rounded_reference():
    def rounded():
        raise AssertionError("asked for without a miss")

    (check,) = check_outputs([off_by(0.005)], [REFERENCE], CONTRACT, TOLERANCE, rounded)
    assert check.passed and check.limit == 1e-2


def test_a_miss_within_twice_the_rounded_error_passes_and_reports_the_limit_applied():
    (check,) = check_outputs([off_by(0.03)], [REFERENCE], CONTRACT, TOLERANCE, lambda: (off_by(0.02),))
    assert check.passed
    assert math.isclose(check.limit, ROUNDED_FACTOR * 0.02)  # the widened limit is the one reported
    assert math.isclose(check.error, 0.03)


def test_a_miss_beyond_twice_the_rounded_error_fails():
    (check,) = check_outputs([off_by(0.05)], [REFERENCE], CONTRACT, TOLERANCE, lambda: (off_by(0.02),))
    assert not check.passed


def test_a_rounded_reference_more_accurate_than_the_limit_does_not_narrow_it():
    (check,) = check_outputs([off_by(0.015)], [REFERENCE], CONTRACT, TOLERANCE, lambda: (off_by(0.001),))
    assert not check.passed and check.limit == 1e-2


def test_a_non_finite_rounded_reference_widens_nothing():
    broken = torch.full_like(REFERENCE, math.inf)
    (check,) = check_outputs([off_by(0.03)], [REFERENCE], CONTRACT, TOLERANCE, lambda: (broken,))
    assert not check.passed and check.limit == 1e-2
