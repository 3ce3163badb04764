"""attention_backward's fp32 references (the inputs' forward and the gradients) with their
matrix products on tensor cores, exactly.

The plain reference (``reference.py``) takes every product in fp32 FMA on GQA-expanded fp32
copies of K and V. Here each product takes its bf16 inputs (Q, K, V, dO) as they are and its
fp32 intermediates (P, dS) in three bf16 pieces, with fp32 sums over blocks of at most 1024
terms (``pytest_nodus.grader.exact_products``: why that is fp32). Query heads are grouped
under their KV head (``[Hkv, group x rows, D]``), so K and V are never expanded and dK and
dV come out summed over each group by the products themselves. Chunks of rows and the keys
each chunk sees are the plain reference's.
"""

from __future__ import annotations

import torch

from env_suites.attention_backward.reference import chunks, visible
from pytest_nodus.grader.exact_products import product, split_product

# The grader's references on a GPU take this path, each checked against the plain one at every
# new size's first call (exact_products.cross_checked): where they disagree, or this path
# fails, the plain one answers.
ON_CUDA = True


def _grouped(x: torch.Tensor, hkv: int) -> torch.Tensor:
    """``[n, Hq, D]`` rows as ``[Hkv, group * n, D]`` bf16: each KV head's query heads together."""
    n, hq, d = x.shape
    return x.view(n, hkv, hq // hkv, d).permute(1, 2, 0, 3).reshape(hkv, hq // hkv * n, d).to(torch.bfloat16)


def _ungrouped(x: torch.Tensor, n: int) -> torch.Tensor:
    """``[Hkv, group * n, D]`` back to ``[n, Hq, D]``."""
    hkv, rows, d = x.shape
    return x.view(hkv, rows // n, n, d).permute(2, 0, 1, 3).reshape(n, rows // n * hkv, d)


def _scores(qs, ks, q0: int, q1: int, k0: int, window: int, scale: float, group: int) -> torch.Tensor:
    """Masked, scaled fp32 scores ``[Hkv, group, n, keys]``."""
    scores = product(qs, ks.transpose(1, 2)).mul_(scale)
    hkv, keys = scores.shape[0], scores.shape[-1]
    mask = visible(torch.arange(q0, q1, device=qs.device), torch.arange(k0, q1, device=qs.device), window)
    return scores.view(hkv, group, q1 - q0, keys).masked_fill_(~mask, float("-inf"))


def forward(q, k, v, cu_seqlens, window: int, scale: float, chunk: int = 256):
    """fp32 o [T, Hq, D] and lse [Hq, T], as ``reference.forward``."""
    t, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    o = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    lse = torch.full((hq, t), float("-inf"), dtype=torch.float32, device=q.device)
    for q0, q1, k0 in chunks(cu_seqlens, hq, window, chunk):
        ks, vs = k[k0:q1].transpose(0, 1), v[k0:q1].transpose(0, 1)  # [Hkv, keys, D]
        scores = _scores(_grouped(q[q0:q1], hkv), ks, q0, q1, k0, window, scale, group)
        chunk_lse = torch.logsumexp(scores, dim=-1)  # [Hkv, group, n]
        p = scores.sub_(chunk_lse[..., None]).exp_().view(hkv, group * (q1 - q0), -1)
        o[q0:q1] = _ungrouped(split_product(p, vs), q1 - q0)
        lse[:, q0:q1] = chunk_lse.reshape(hq, q1 - q0)
    return o, lse


def backward(q, k, v, o, do, cu_seqlens, window: int, scale: float, chunk: int = 256):
    """fp32 dq [T, Hq, D], dk and dv [T, Hkv, D], as ``reference.backward``."""
    t, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    dq = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    dk = torch.zeros(hkv, t, d, dtype=torch.float32, device=q.device)
    dv = torch.zeros(hkv, t, d, dtype=torch.float32, device=q.device)
    for q0, q1, k0 in chunks(cu_seqlens, hq, window, chunk):
        n = q1 - q0
        ks, vs = k[k0:q1].transpose(0, 1), v[k0:q1].transpose(0, 1)  # [Hkv, keys, D]
        qs, dos = _grouped(q[q0:q1], hkv), _grouped(do[q0:q1], hkv)  # [Hkv, group * n, D]
        p = torch.softmax(_scores(qs, ks, q0, q1, k0, window, scale, group), dim=-1).view(hkv, group * n, -1)
        delta = (do[q0:q1].float() * o[q0:q1].float()).sum(-1)  # [n, Hq]
        delta = delta.view(n, hkv, group).permute(1, 2, 0).reshape(hkv, group * n, 1)
        ds = product(dos, vs.transpose(1, 2)).sub_(delta).mul_(p)  # [Hkv, group * n, keys]
        dv[:, k0:q1] += split_product(p.transpose(1, 2), dos)
        dk[:, k0:q1] += split_product(ds.transpose(1, 2).clone(), qs).mul_(scale)
        dq[q0:q1] += _ungrouped(split_product(ds, ks).mul_(scale), n)
    return dq, dk.transpose(0, 1).contiguous(), dv.transpose(0, 1).contiguous()
