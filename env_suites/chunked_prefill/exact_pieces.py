"""chunked_prefill's fp32 reference with its matrix products on tensor cores, exactly.

The plain reference (``reference.attention``) does its two products in fp32 FMA, the GPU's
slowest matrix path (about 67 TF/s of fp32 on an H200 against about 990 of bf16 tensor
cores). Here ``Q K^T`` takes the bf16 inputs as they are and ``P V`` takes P in three bf16
pieces, with fp32 sums over key blocks (``pytest_nodus.grader.exact_products``: why that is fp32).

Keys and values are laid out once per sequence as ``[blocks, Hkv, KEY_BLOCK, D]`` (zeros past
the context), so the first ``b`` blocks of every head are one contiguous batch of ``b * Hkv``
products: one product per piece however long the context. Scores live in the same blocked
layout, and the softmax runs over blocks and keys together.
"""

from __future__ import annotations

import torch

from env_suites.chunked_prefill.reference import BUDGET_BYTES, gathered, sequences
from pytest_nodus.grader.exact_products import BLOCK as KEY_BLOCK
from pytest_nodus.grader.exact_products import PIECES, bmm, split

# The grader's reference on a GPU takes this path, checked against the plain one at every new
# size's first call (exact_products.cross_checked): where they disagree, or this path fails,
# the plain one answers.
ON_CUDA = True
# Bytes alive per score element: the fp32 scores (then P, then the split's remainder, all in
# place), a bf16 piece and its fp32 copy for the subtraction: 10, counted as the plain
# reference's 16 so both take the same rows under BUDGET_BYTES.
BYTES_PER_SCORE = 16


def blocked(cache: torch.Tensor, table_row: torch.Tensor, tokens: int, block: int) -> torch.Tensor:
    """One sequence's first ``tokens`` cached rows as bf16 ``[blocks, Hkv, block, D]``, zeros
    past ``tokens``."""
    rows = gathered(cache, table_row, tokens, dtype=torch.bfloat16)  # [Hkv, tokens, D]
    hkv, _, d = rows.shape
    count = -(-tokens // block)
    padded = torch.nn.functional.pad(rows, (0, 0, 0, count * block - tokens))
    return padded.view(hkv, count, block, d).transpose(0, 1).contiguous()


def attention(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale,
              rows_most: int = 256) -> torch.Tensor:
    """fp32 o ``[Tq, Hq, D]``, as ``reference.attention``."""
    tq, hq, d = q.shape
    hkv = k_cache.shape[1]
    group = hq // hkv
    o = torch.zeros(tq, hq, d, dtype=torch.float32, device=q.device)
    for b, q0, q1, context in sequences(cu_seqlens_q, cache_seqlens):
        block = min(KEY_BLOCK, context)
        keys = blocked(k_cache, block_table[b], context, block)
        values = blocked(v_cache, block_table[b], context, block)
        first = context - (q1 - q0)  # the chunk's first absolute position
        padded = keys.shape[0] * block
        rows = max(1, min(rows_most, BUDGET_BYTES // (BYTES_PER_SCORE * hq * padded)))
        for r0 in range(q0, q1, rows):
            r1 = min(r0 + rows, q1)
            o[r0:r1] = _rows(q[r0:r1], keys, values, first + (r0 - q0), softmax_scale, group)
    return o


def _rows(q: torch.Tensor, keys: torch.Tensor, values: torch.Tensor, position: int, scale: float,
          group: int) -> torch.Tensor:
    """o of ``n`` consecutive query rows, the first at absolute ``position``: ``[n, Hq, D]``."""
    n, hq, d = q.shape
    _, hkv, block, _ = keys.shape
    count = -(-(position + n) // block)  # the blocks holding every key the last row sees
    rows = group * n
    qs = q.view(n, hkv, group, d).permute(1, 2, 0, 3).reshape(hkv, rows, d)
    qs = qs.unsqueeze(0).expand(count, hkv, rows, d).reshape(count * hkv, rows, d)
    k = keys[:count].view(count * hkv, block, d)
    scores = bmm(qs, k.transpose(1, 2)).mul_(scale).view(count, hkv, group, n, block)
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
    parts = [bmm(piece, v).view(count, hkv, rows, d).sum(dim=0) for piece in split(p, PIECES)]
    out = parts.pop()
    while parts:  # smallest pieces first
        out = out + parts.pop()
    return out.view(hkv, group, n, d).permute(2, 0, 1, 3).reshape(n, hq, d)
