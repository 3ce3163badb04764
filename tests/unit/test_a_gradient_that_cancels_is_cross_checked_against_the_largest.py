"""Gradients cross-checked with a common scale: one that cancels to rounding noise (attention's
dQ and dK at a window of 1) is compared against the largest gradient's norm, so two correct
references whose noise differs still agree, while a fast reference wrong in that gradient by
more than the cross-check's limit of the common scale still hands over."""

from __future__ import annotations

import warnings

import pytest
import torch

from pytest_nodus.grader.exact_products import CROSS_CHECK_LIMIT, cross_checked

BIG = torch.randn(64, 32) * 10


def gradients(noise: torch.Tensor):
    return lambda x: (noise, BIG + x)


def test_noise_in_a_cancelled_gradient_is_not_a_disagreement():
    x = torch.zeros(64, 32)
    plain = gradients(torch.randn(64, 32) * 1e-7)
    fast = gradients(torch.randn(64, 32) * 1e-7)  # other noise: 100% apart by its own norm
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert cross_checked(fast, plain, "test", common_scale=True)(x)[0] is fast(x)[0]
    with pytest.warns(RuntimeWarning, match="from the plain fp32 one"):
        cross_checked(fast, plain, "test")(x)


def test_a_wrong_cancelled_gradient_still_hands_over():
    x = torch.zeros(64, 32)
    plain = gradients(torch.zeros(64, 32))
    wrong = gradients(BIG * 100 * CROSS_CHECK_LIMIT)  # 100x the limit of the largest gradient's norm
    reference = cross_checked(wrong, plain, "test", common_scale=True)
    with pytest.warns(RuntimeWarning, match="from the plain fp32 one"):
        out = reference(x)
    assert torch.equal(out[0], torch.zeros(64, 32))
