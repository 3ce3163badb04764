"""attention_backward's tensor-core references (``exact_pieces``: bf16 operands, P and dS in
three bf16 pieces, query heads grouped under their KV head, sums in blocks) give the plain
fp32 references' forward and gradients to fp32 rounding: on the CPU the products are the
same exact products, so a gap would be the algorithm's (a lost piece, a group summed wrong,
a block left out)."""

from __future__ import annotations

import pytest
import torch

from env_suites.attention_backward import environment, exact_pieces, reference
from pytest_nodus.grader import exact_products

SIZES = [{"T": 96, "Hq": 4, "Hkv": 2, "D": 32, "B": 3, "W": 24},
         {"T": 300, "B": 3, "Hq": 8, "Hkv": 2, "D": 32, "W": -1},
         {"T": 200, "B": 2, "Hq": 4, "Hkv": 4, "D": 16, "W": 50},
         {"T": 130, "B": 1, "Hq": 8, "Hkv": 1, "D": 16, "W": 1}]


def normwise(x: torch.Tensor, y: torch.Tensor) -> float:
    return float((x - y).norm() / y.norm())


@pytest.mark.parametrize("block", [16, 1024])  # sums in many blocks, and in one
@pytest.mark.parametrize("dims", SIZES, ids=str)
def test_exact_pieces_match_the_plain_references(dims, block, monkeypatch):
    monkeypatch.setattr(exact_products, "BLOCK", block)
    inputs = environment.make_inputs(dims, torch.Generator().manual_seed(block), torch.device("cpu"))
    q, k, v, cu, window, scale = (inputs[n] for n in ("q", "k", "v", "cu_seqlens", "window", "softmax_scale"))
    (o, lse), (o_exact, lse_exact) = reference.forward(q, k, v, cu, window, scale), \
        exact_pieces.forward(q, k, v, cu, window, scale)
    assert normwise(o_exact, o) < 1e-6 and normwise(lse_exact, lse) < 1e-6
    plain = reference.backward(q, k, v, inputs["o"], inputs["do"], cu, window, scale)
    exact = exact_pieces.backward(q, k, v, inputs["o"], inputs["do"], cu, window, scale)
    for name, a, b in zip(("dq", "dk", "dv"), plain, exact):
        assert b.shape == a.shape and normwise(b, a) < 1e-6, name

