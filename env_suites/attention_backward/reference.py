"""fp32 reference for attention backward over packed documents, causal sliding windows, GQA.

Query i sees key j iff both lie in the same document, j <= i, and (window < 0 or i - j < window).
The reference recomputes the probabilities in fp32 from q, k, v and takes
``delta = rowsum(dO * o)`` from the *given* forward output ``o`` (bf16), as FlashAttention
and cuDNN do: the gradient is the one of the forward that produced ``o``. With the exact
fp32 output instead, a window of 1 (or a one-token document) has exactly zero dQ and dK,
and every kernel that uses the given ``o`` would be infinitely wrong relative to zero.
Returns dq, dk, dv in fp32 (dk, dv summed over each KV group's query heads).
``fused_reference.py`` is the same math as Triton kernels, its products on tensor cores, exactly.

Memory: queries are processed in chunks of rows per document, and each chunk only looks at
the keys it can see (at most ``rows + window - 1``, or the document's prefix for full
causal). The largest temporaries are ``Hq x rows x keys`` fp32 scores, probabilities and
their gradients (about four alive at once). Rows per chunk are at most 256 and shrink so
those four stay under ``BUDGET_BYTES`` (1 GiB): T = 65536 in one full-causal document with
Hq = 32 runs 32-row chunks (peak ~1 GiB plus the fp32 gradients, 3 x T x Hq x D x 4 B);
with a 4096 window, 256-row chunks take 4 x 32 x 256 x 4351 x 4 B = 0.57 GB.
"""

from __future__ import annotations

import torch


BUDGET_BYTES = 1 << 30


def _chunk_rows(heads: int, length: int, window: int, most: int) -> int:
    keys = length if window < 0 else min(length, most + window - 1)
    return max(1, min(most, BUDGET_BYTES // (4 * 4 * heads * max(keys, 1))))


def chunks(cu_seqlens, heads: int, window: int, most: int = 256):
    """``(q0, q1, k0)`` per chunk of query rows, document after document: the rows
    ``[q0, q1)`` and the first key any of them sees (the keys run to ``q1``)."""
    for start, end in _documents(cu_seqlens):
        rows = _chunk_rows(heads, end - start, window, most)
        for q0 in range(start, end, rows):
            yield q0, min(q0 + rows, end), start if window < 0 else max(start, q0 - window + 1)


def visible(rows: torch.Tensor, cols: torch.Tensor, window: int) -> torch.Tensor:
    """Causal (and windowed) visibility of ``cols`` from ``rows`` within one document."""
    delta = rows[:, None] - cols[None, :]
    mask = delta >= 0
    if window > 0:
        mask &= delta < window
    return mask


def forward(q, k, v, cu_seqlens, window: int, scale: float, chunk: int = 256):
    """fp32 o [T, Hq, D] and lse [Hq, T] (natural log), for the input generator."""
    t, hq, d = q.shape
    group = hq // k.shape[1]
    o = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    lse = torch.full((hq, t), float("-inf"), dtype=torch.float32, device=q.device)
    for q0, q1, k0 in chunks(cu_seqlens, hq, window, chunk):
        qs = q[q0:q1].float().transpose(0, 1)  # [Hq, n, D]
        ks = k[k0:q1].float().repeat_interleave(group, dim=1).transpose(0, 1)
        vs = v[k0:q1].float().repeat_interleave(group, dim=1).transpose(0, 1)
        scores = scale * qs @ ks.transpose(1, 2)
        mask = visible(torch.arange(q0, q1, device=q.device), torch.arange(k0, q1, device=q.device), window)
        scores = scores.masked_fill(~mask, float("-inf"))
        chunk_lse = torch.logsumexp(scores, dim=-1)  # [Hq, n]
        o[q0:q1] = (torch.exp(scores - chunk_lse[..., None]) @ vs).transpose(0, 1)
        lse[:, q0:q1] = chunk_lse
    return o, lse


def backward(q, k, v, o, do, cu_seqlens, window: int, scale: float, chunk: int = 256, rounded: bool = False):
    """fp32 dq [T, Hq, D], dk and dv [T, Hkv, D] for the forward output ``o``.

    ``rounded``: round where a FlashAttention-style bf16 backward must, P and dS to bf16
    before the products that take them and the gradients to bf16 at the end (scores, dP and
    the accumulations stay fp32), so the result carries an honest kernel's rounding errors
    (``Environment.rounded_reference``)."""
    cast = (lambda x: x.to(torch.bfloat16).float()) if rounded else (lambda x: x)
    t, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    dq = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    dk = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)  # per query head, summed below
    dv = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    for q0, q1, k0 in chunks(cu_seqlens, hq, window, chunk):
        qs = q[q0:q1].float().transpose(0, 1)
        ks = k[k0:q1].float().repeat_interleave(group, dim=1).transpose(0, 1)
        vs = v[k0:q1].float().repeat_interleave(group, dim=1).transpose(0, 1)
        dos = do[q0:q1].float().transpose(0, 1)
        scores = scale * qs @ ks.transpose(1, 2)
        mask = visible(torch.arange(q0, q1, device=q.device), torch.arange(k0, q1, device=q.device), window)
        scores = scores.masked_fill(~mask, float("-inf"))
        p = torch.softmax(scores, dim=-1)  # [Hq, n, keys]
        delta = (dos * o[q0:q1].float().transpose(0, 1)).sum(-1, keepdim=True)
        dp = dos @ vs.transpose(1, 2)
        ds = cast(p * (dp - delta))
        dq[q0:q1] += (scale * ds @ ks).transpose(0, 1)
        dk[k0:q1] += (scale * ds.transpose(1, 2) @ qs).transpose(0, 1)
        dv[k0:q1] += (cast(p).transpose(1, 2) @ dos).transpose(0, 1)
    dk = dk.view(t, hkv, group, d).sum(2)
    dv = dv.view(t, hkv, group, d).sum(2)
    return cast(dq), cast(dk), cast(dv)


def _documents(cu_seqlens):
    bounds = cu_seqlens.tolist()
    return [(bounds[i], bounds[i + 1]) for i in range(len(bounds) - 1)]
