"""The fp32 reference with its matrix products on tensor cores, exactly.

The plain reference (``reference.attention``) does its two products in fp32 FMA, the GPU's
slowest matrix path (about 67 TF/s of fp32 on an H200 against about 990 of bf16 tensor
cores). Nothing in those products needs fp32 operands:

* Q, K and V are bf16. A product of two bf16 values has 16 significand bits and is exact in
  fp32, so ``Q K^T`` taken as bf16 operands with fp32 sums (``torch.bmm(..., out_dtype=
  torch.float32)``) is the fp32 product up to the order of its sums.
* P is fp32 (24 significand bits). It is split into three bf16 pieces, each the rounding of
  what the earlier ones left (8 bits each, every subtraction exact in fp32), so the pieces
  sum to P exactly wherever P is above bf16's smallest normal (2^-126: a probability under it
  moves no output). ``P V`` is the three products of the pieces with V, added smallest first.

Each product sums over at most ``KEY_BLOCK`` keys before the blocks are added in IEEE fp32:
a tensor core's fp32 accumulator need not round to nearest (it truncates in the
measurements of Fasi et al., "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021), and
over 131072 keys that bias would reach about 1e-3; over 1024 keys (64 steps of 16) it stays
under 1e-5, six hundred times below the environment's tolerance.

Keys and values are laid out once per sequence as ``[blocks, Hkv, KEY_BLOCK, D]`` (zeros past
the context), so the first ``b`` blocks of every head are one contiguous batch of ``b * Hkv``
products. Scores live in the same blocked layout; the softmax runs over blocks and keys
together. On a CPU the products are fp32 ``bmm`` of the same bf16 values: the same exact
products and fp32 sums, which is how the tests check this module against the plain
reference.
"""

from __future__ import annotations

import torch

from env_suites.chunked_prefill.reference import BUDGET_BYTES, gathered

# The grader's reference on a GPU takes this path once it is measured against the plain one
# there (tools/probes/prefill_reference.py: agreement and seconds per size).
ON_CUDA = False
KEY_BLOCK = 1024
PIECES = 3  # 3 x 8 bits: every significand bit of an fp32 P
# Bytes alive per score element: the fp32 scores (then P, then the split's remainder, all in
# place), a bf16 piece and its fp32 copy for the subtraction: 10, counted as the plain
# reference's 16 so both take the same rows under BUDGET_BYTES.
BYTES_PER_SCORE = 16


def _products(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` of bf16 batches: exact products, fp32 sums, fp32 out."""
    if a.is_cuda:
        return torch.bmm(a, b, out_dtype=torch.float32)
    return torch.bmm(a.float(), b.float())


def split(p: torch.Tensor, count: int):
    """Yield ``count`` bf16 pieces of fp32 ``p``, each the rounding of what the earlier left;
    three sum to ``p`` exactly wherever ``p`` is above 2^-110 (the last remainder's bits stay
    inside bf16's range). Uses ``p`` up: it holds the remainder as the pieces are taken."""
    for i in range(count):
        piece = p.to(torch.bfloat16)
        yield piece
        if i + 1 < count:
            p.sub_(piece.float())  # exact in fp32: the remainder has at most 24 - 8 (i + 1) bits


def blocked(cache: torch.Tensor, table_row: torch.Tensor, tokens: int, block: int) -> torch.Tensor:
    """One sequence's first ``tokens`` cached rows as bf16 ``[blocks, Hkv, block, D]``, zeros
    past ``tokens``."""
    rows = gathered(cache, table_row, tokens, dtype=torch.bfloat16)  # [Hkv, tokens, D]
    hkv, _, d = rows.shape
    count = -(-tokens // block)
    padded = torch.nn.functional.pad(rows, (0, 0, 0, count * block - tokens))
    return padded.view(hkv, count, block, d).transpose(0, 1).contiguous()


def attention(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale,
              rows_most: int = 256, rounded: bool = False) -> torch.Tensor:
    """fp32 o ``[Tq, Hq, D]``, as ``reference.attention`` (``rounded`` the same: P rounded to
    bf16 before its product with V, i.e. its first piece alone, and o to bf16)."""
    tq, hq, d = q.shape
    hkv = k_cache.shape[1]
    group = hq // hkv
    o = torch.zeros(tq, hq, d, dtype=torch.float32, device=q.device)
    bounds, contexts = cu_seqlens_q.tolist(), cache_seqlens.tolist()
    for b, context in enumerate(contexts):
        q0, q1 = bounds[b], bounds[b + 1]
        if q1 == q0:
            continue
        block = min(KEY_BLOCK, context)
        keys = blocked(k_cache, block_table[b], context, block)
        values = blocked(v_cache, block_table[b], context, block)
        first = context - (q1 - q0)  # the chunk's first absolute position
        padded = keys.shape[0] * block
        rows = max(1, min(rows_most, BUDGET_BYTES // (BYTES_PER_SCORE * hq * padded)))
        for r0 in range(q0, q1, rows):
            r1 = min(r0 + rows, q1)
            o[r0:r1] = _rows(q[r0:r1], keys, values, first + (r0 - q0), softmax_scale, group, rounded)
    return o.to(torch.bfloat16).float() if rounded else o


def _rows(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, position: int, scale: float,
          group: int, rounded: bool) -> torch.Tensor:
    """o of ``n`` consecutive query rows, the first at absolute ``position``: ``[n, Hq, D]``."""
    n, hq, d = q.shape
    _, hkv, block, _ = keys.shape
    count = -(-(position + n) // block)  # the blocks holding every key the last row sees
    rows = group * n
    qs = q.view(n, hkv, group, d).permute(1, 2, 0, 3).reshape(hkv, rows, d)
    qs = qs.unsqueeze(0).expand(count, hkv, rows, d).reshape(count * hkv, rows, d)
    k = keys[:count].view(count * hkv, block, d)
    scores = _products(qs, k.transpose(1, 2)).mul_(scale).view(count, hkv, group, n, block)
    # Every row sees the keys up to its own position: the first row up to ``position``, so
    # only the blocks from that key on hold a hidden one (the causal triangle and the zeros
    # past the context).
    lo = (position + 1) // block
    key = (lo + torch.arange(count - lo, device=q.device))[:, None] * block + torch.arange(block, device=q.device)
    hidden = key[:, None, :] > (position + torch.arange(n, device=q.device))[None, :, None]  # [blocks, n, block]
    scores[lo:].masked_fill_(hidden[:, None, None], float("-inf"))
    top = scores.amax(dim=(0, 4), keepdim=True)
    p = scores.sub_(top).exp_()
    p = p.div_(p.sum(dim=(0, 4), keepdim=True)).view(count * hkv, rows, block)
    v = values[:count].view(count * hkv, block, d)
    parts = [_products(piece, v).view(count, hkv, rows, d).sum(dim=0) for piece in split(p, 1 if rounded else PIECES)]
    out = parts.pop()
    while parts:  # smallest pieces first
        out = out + parts.pop()
    return out.view(hkv, group, n, d).permute(2, 0, 1, 3).reshape(n, hq, d)
