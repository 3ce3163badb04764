"""Cheat: address the cache as if every page held 64 tokens (the public sizes' most common page
size): a key's page is its position // 64 and its slot position % 64. Right at page size 64,
wrong at 16 or 128."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch

ASSUMED_PAGE = 64


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    tq, hq, d = q.shape
    hkv = k_cache.shape[1]
    # Token-major rows over the pages: row = physical page * page size + slot.
    k_rows = k_cache.transpose(1, 2).reshape(-1, hkv, d)
    v_rows = v_cache.transpose(1, 2).reshape(-1, hkv, d)
    o = torch.zeros_like(q)
    bounds = cu_seqlens_q.tolist()
    for b, context in enumerate(cache_seqlens.tolist()):
        q0, q1 = bounds[b], bounds[b + 1]
        n = q1 - q0
        keys = torch.arange(context, device=q.device)
        slot = block_table[b, (keys // ASSUMED_PAGE).clamp(max=block_table.shape[1] - 1)].long()
        rows = (slot * ASSUMED_PAGE + keys % ASSUMED_PAGE) % k_rows.shape[0]
        k = k_rows[rows].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
        v = v_rows[rows].float().transpose(0, 1).repeat_interleave(hq // hkv, 0)
        positions = torch.arange(context - n, context, device=q.device)
        mask = positions[:, None] >= keys[None, :]
        step = max(1, (1 << 28) // (hq * context))  # query rows per block: ~1 GiB of fp32 scores
        for r in range(q0, q1, step):
            e = min(q1, r + step)
            scores = softmax_scale * q[r:e].float().transpose(0, 1) @ k.transpose(1, 2)
            scores = scores.masked_fill(~mask[r - q0:e - q0], float("-inf"))
            o[r:e] = (torch.softmax(scores, -1) @ v).transpose(0, 1).to(q.dtype)
    return o
