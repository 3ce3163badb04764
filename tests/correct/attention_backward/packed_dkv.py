"""Correct: dK and dV returned as the two halves of one [2, T, Hkv, D] allocation (FlashAttention's packed dkv); outputs are apart by their bytes, not by their storage. Within the task card's GPU memory."""

import torch

# Query rows per block: each block's fp32 score-sized temporaries (scores, P, dP, dS: heads x
# rows x keys) stay near this many bytes, so the math runs inside the task card's GPU memory
# (16 GiB) at every size: the whole [heads, keys, keys] at once grows with the square of the
# longest document, tens of GiB at the public sizes.
BLOCK_BYTES = 256 << 20


def _backward(q, k, v, o, do, cu_seqlens, window, scale, *, documents=None, group_of=None, skip_last=False):
    """Dense per-document attention backward in fp32, a block of query rows at a time."""
    t, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    heads = (torch.arange(hq) // group if group_of is None else group_of(hq, hkv)).to(q.device)
    dq = torch.zeros(t, hq, d, device=q.device)
    dk = torch.zeros(t, hkv, d, device=q.device)
    dv = torch.zeros(t, hkv, d, device=q.device)
    bounds = cu_seqlens.tolist() if documents is None else documents(cu_seqlens)
    spans = list(zip(bounds, bounds[1:]))
    if skip_last:
        spans = spans[:-1]
    for s, e in spans:
        ks, vs = (x[s:e].float()[:, heads].transpose(0, 1) for x in (k, v))
        dks, dvs = torch.zeros_like(ks), torch.zeros_like(vs)
        keys = torch.arange(s, e, device=q.device)
        step = max(1, BLOCK_BYTES // (4 * hq * (e - s)))
        for r0 in range(s, e, step):
            r1 = min(r0 + step, e)
            qs, dos, os_ = (x[r0:r1].float().transpose(0, 1) for x in (q, do, o))
            rows = torch.arange(r0, r1, device=q.device)
            mask = rows[:, None] >= keys[None, :]
            if window > 0:
                mask &= rows[:, None] - keys[None, :] < window
            p = torch.softmax((scale * qs @ ks.transpose(1, 2)).masked_fill(~mask, float("-inf")), -1)
            ds = p * (dos @ vs.transpose(1, 2) - (dos * os_).sum(-1, keepdim=True))
            dq[r0:r1] = (scale * ds @ ks).transpose(0, 1)
            dks += scale * ds.transpose(1, 2) @ qs
            dvs += p.transpose(1, 2) @ dos
        dk[s:e].index_add_(1, heads, dks.transpose(0, 1))
        dv[s:e].index_add_(1, heads, dvs.transpose(0, 1))
    return dq, dk, dv


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    dq, dk, dv = _backward(q, k, v, o, do, cu_seqlens, window, softmax_scale)
    # One allocation for both key-side gradients, as FlashAttention's backward returns them.
    dkv = torch.empty((2, *dk.shape), dtype=q.dtype, device=q.device)
    dkv[0].copy_(dk)
    dkv[1].copy_(dv)
    return dq.to(q.dtype), dkv[0], dkv[1]
