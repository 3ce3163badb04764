"""The tolerances' errors (fp32 elementwise, fp64 sums of squares a chunk at a time) read what
whole-fp64 arithmetic reads, to a few parts in 10^7, across chunks and at magnitudes whose
squares leave fp32's range, and over millions of elements (where an fp32 sum drifts)."""

from __future__ import annotations

import pytest
import torch

from pytest_nodus.grader import correctness, norms
from pytest_nodus.grader.correctness import ElementwiseRelative, Normwise


def fp64_normwise(out, ref):
    return float((out.double() - ref.double()).norm() / ref.double().norm())


def fp64_elementwise(out, ref, floor_fraction=1e-2):
    out, ref = out.double(), ref.double()
    floor = floor_fraction * float(ref.pow(2).mean().sqrt())
    return float(((out - ref).abs() / (ref.abs() + floor)).max())


@pytest.mark.parametrize("scale", [1.0, 1e-20, 1e21])  # squares under and over fp32's range
def test_errors_agree_with_fp64(scale, monkeypatch):
    monkeypatch.setattr(norms, "CHUNK", 4096)  # many chunks and a ragged last one
    g = torch.Generator().manual_seed(0)
    ref = scale * torch.randn(300, 101, generator=g)
    out = (ref * (1 + 3e-3 * torch.randn(ref.shape, generator=g))).bfloat16()
    assert Normwise(limit=1.0).error(out, ref, {}) == pytest.approx(fp64_normwise(out, ref), rel=1e-6)
    assert ElementwiseRelative(limit=1.0).error(out, ref, {}) == pytest.approx(fp64_elementwise(out, ref), rel=1e-6)


def test_a_norm_over_millions_of_elements_keeps_fp64_accuracy():
    ref = torch.randn(4096, 4096, generator=torch.Generator().manual_seed(1))
    exact = float(ref.double().norm())
    assert correctness._norm(ref) == pytest.approx(exact, rel=1e-9)
