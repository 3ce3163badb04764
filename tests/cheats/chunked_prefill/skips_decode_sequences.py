"""Cheat: sequences whose chunk is one token (decode-like) are skipped and left at zero, as a
prefill kernel that launches only over chunks of two or more tokens would."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    tq, hq, d = q.shape
    hkv, page = k_cache.shape[1], k_cache.shape[2]
    o = torch.zeros_like(q)
    bounds = cu_seqlens_q.tolist()
    for b, context in enumerate(cache_seqlens.tolist()):
        q0, q1 = bounds[b], bounds[b + 1]
        n = q1 - q0
        if n == 1:
            continue  # the decode-like chunk: never launched
        pages = block_table[b, : -(-context // page)].long()
        k = k_cache[pages].float().transpose(0, 1).reshape(hkv, -1, d)[:, :context]
        v = v_cache[pages].float().transpose(0, 1).reshape(hkv, -1, d)[:, :context]
        k, v = k.repeat_interleave(hq // hkv, 0), v.repeat_interleave(hq // hkv, 0)
        positions = torch.arange(context - n, context, device=q.device)
        mask = positions[:, None] >= torch.arange(context, device=q.device)[None, :]
        step = max(1, (1 << 28) // (hq * context))  # query rows per block: ~1 GiB of fp32 scores
        for r in range(q0, q1, step):
            e = min(q1, r + step)
            scores = softmax_scale * q[r:e].float().transpose(0, 1) @ k.transpose(1, 2)
            scores = scores.masked_fill(~mask[r - q0:e - q0], float("-inf"))
            o[r:e] = (torch.softmax(scores, -1) @ v).transpose(0, 1).to(q.dtype)
    return o
