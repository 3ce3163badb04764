"""Cheat: run the backward on fp8 (e4m3) copies of the inputs."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
# On the GPU its dense fp32 temporaries (24-35 GiB at public-0) pass the card's 16 GiB first,
# and the grader stops it there (grader/gpu_memory_wall.py).
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("error", ("over_limit",))}

import torch

def _backward(q, k, v, o, do, cu_seqlens, window, scale, *, documents=None, group_of=None, skip_last=False):
    """Dense per-document attention backward in fp32 (the honest math, with knobs to cheat)."""
    t, hq, d = q.shape
    hkv = k.shape[1]
    group = hq // hkv
    heads = torch.arange(hq) // group if group_of is None else group_of(hq, hkv)
    dq = torch.zeros(t, hq, d, device=q.device)
    dk = torch.zeros(t, hkv, d, device=q.device)
    dv = torch.zeros(t, hkv, d, device=q.device)
    bounds = cu_seqlens.tolist() if documents is None else documents(cu_seqlens)
    spans = list(zip(bounds, bounds[1:]))
    if skip_last:
        spans = spans[:-1]
    for s, e in spans:
        qs, dos, os_ = (x[s:e].float().transpose(0, 1) for x in (q, do, o))
        ks, vs = (x[s:e].float()[:, heads].transpose(0, 1) for x in (k, v))
        rows = torch.arange(s, e, device=q.device)
        mask = rows[:, None] >= rows[None, :]
        if window > 0:
            mask &= rows[:, None] - rows[None, :] < window
        p = torch.softmax((scale * qs @ ks.transpose(1, 2)).masked_fill(~mask, float("-inf")), -1)
        ds = p * (dos @ vs.transpose(1, 2) - (dos * os_).sum(-1, keepdim=True))
        dq[s:e] = (scale * ds @ ks).transpose(0, 1)
        dk[s:e].index_add_(1, heads.to(q.device), (scale * ds.transpose(1, 2) @ qs).transpose(0, 1))
        dv[s:e].index_add_(1, heads.to(q.device), (p.transpose(1, 2) @ dos).transpose(0, 1))
    return dq, dk, dv


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    low = [x.to(torch.float8_e4m3fn).to(torch.bfloat16) for x in (q, k, v, o, do)]
    return tuple(g.to(q.dtype) for g in _backward(*low[:4], low[4], cu_seqlens, window, softmax_scale))
