"""Matrix products of an fp32 reference on tensor cores, without giving up fp32.

For environments' references (grader side): an attention reference's operands are bf16 inputs
(Q, K, V, dO) or fp32 intermediates (P, dS). A product of two bf16 values has 16 significand
bits and is exact in fp32, so a product of bf16 operands with fp32 sums
(``torch.bmm(..., out_dtype=torch.float32)`` on a GPU) is the fp32 product up to the order of
its sums. An fp32 operand is split into three bf16 pieces, each the rounding of what the
earlier ones left (8 bits each, every subtraction exact in fp32): they sum to it exactly
wherever it is above 2^-110, so its product is the three pieces' products, added smallest
first.

Every product sums at most ``BLOCK`` terms on a tensor core before the blocks are added in
IEEE fp32: a tensor core's fp32 accumulator need not round to nearest (it truncates in the
measurements of Fasi et al., "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021), and
over 131072 terms that bias would reach about 1e-3 relative; over 1024 (64 steps of 16) it
stays under 1e-5.

On a CPU the same products run as fp32 ``bmm`` of the same bf16 values: the same exact
products and fp32 sums, so a test on the CPU checks an algorithm built on this module against
its plain fp32 twin, and only the hardware's sums are left for the GPU to show.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

BLOCK = 1024
PIECES = 3  # 3 x 8 bits: every significand bit of fp32


def bmm(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of bf16 batches ``[n, m, k] @ [n, k, p]``: exact products, fp32 sums, fp32 out."""
    if a.is_cuda:
        return torch.bmm(a, b, out_dtype=torch.float32)
    return torch.bmm(a.float(), b.float())


def split(x: torch.Tensor, count: int) -> Iterator[torch.Tensor]:
    """Yield ``count`` bf16 pieces of fp32 ``x``, each the rounding of what the earlier left.
    Uses ``x`` up: it holds the remainder as the pieces are taken."""
    for i in range(count):
        piece = x.to(torch.bfloat16)
        yield piece
        if i + 1 < count:
            x.sub_(piece.float())  # exact in fp32: the remainder has at most 24 - 8 (i + 1) bits


def product(a: torch.Tensor, b: torch.Tensor, block: int | None = None) -> torch.Tensor:
    """``a @ b`` of bf16 batches, at most ``block`` (default ``BLOCK``) terms per tensor-core sum."""
    block = block or BLOCK
    k = a.shape[-1]
    out = bmm(a[..., :block], b[:, :block])
    for i in range(block, k, block):
        out.add_(bmm(a[..., i:i + block], b[:, i:i + block]))
    return out


def split_product(x: torch.Tensor, b: torch.Tensor, pieces: int = PIECES, block: int | None = None) -> torch.Tensor:
    """``x @ b`` for fp32 ``x`` (used up, see ``split``) and bf16 ``b``; ``pieces=1`` is x
    rounded to bf16 first, as a bf16 kernel rounds."""
    parts = [product(piece, b, block) for piece in split(x, pieces)]
    out = parts.pop()
    while parts:  # the smallest pieces first
        out.add_(parts.pop())
    return out
