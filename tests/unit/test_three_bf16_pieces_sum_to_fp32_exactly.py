"""The split behind the tensor-core references (pytest_nodus.grader.exact_products): three
bf16 pieces of an fp32 probability sum back to it exactly, across the magnitudes a softmax
produces (down to 2^-110, where the last piece's bits would leave bf16's range), and two
pieces do not."""

from __future__ import annotations

import torch

from pytest_nodus.grader.exact_products import split


def probabilities() -> torch.Tensor:
    g = torch.Generator().manual_seed(0)
    significands = 1 + torch.rand(200_000, generator=g, dtype=torch.float64)
    exponents = torch.randint(-110, 0, (200_000,), generator=g)
    return (significands * torch.pow(2.0, exponents.double())).float()


def test_three_pieces_sum_to_the_value():
    p = probabilities()
    pieces = list(split(p.clone(), 3))
    assert all(piece.dtype == torch.bfloat16 for piece in pieces)
    total = pieces[2].double() + pieces[1].double() + pieces[0].double()
    assert torch.equal(total, p.double())


def test_two_pieces_do_not():
    p = probabilities()
    pieces = list(split(p.clone(), 2))
    assert not torch.equal(pieces[1].double() + pieces[0].double(), p.double())
