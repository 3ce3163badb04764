"""Cheat: attend to every slot of each sequence's pages, trusting that a page holds no more
than the sequence wrote (skips the per-token end check a paged kernel needs).

The slots past ``cache_seqlens[b]`` in a sequence's last page hold garbage, and the last
pages' tails are where a kernel that masks by page instead of by token goes wrong.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    tq, hq, d = q.shape
    hkv, page = k_cache.shape[1], k_cache.shape[2]
    o = torch.empty_like(q)
    bounds = cu_seqlens_q.tolist()
    for b, context in enumerate(cache_seqlens.tolist()):
        q0, q1 = bounds[b], bounds[b + 1]
        pages = block_table[b, : -(-context // page)].long()
        k = k_cache[pages].float().transpose(0, 1).reshape(hkv, -1, d)  # every slot of the pages
        v = v_cache[pages].float().transpose(0, 1).reshape(hkv, -1, d)
        k, v = k.repeat_interleave(hq // hkv, 0), v.repeat_interleave(hq // hkv, 0)
        qs = q[q0:q1].float().transpose(0, 1)
        position = context - (q1 - q0) + torch.arange(q1 - q0, device=q.device)
        keys = torch.arange(k.shape[1], device=q.device)
        # Causal by position, but the tail of the last page is never cut off.
        visible = (keys[None, :] <= position[:, None]) | (keys[None, :] >= context)
        step = max(1, (1 << 28) // (hq * k.shape[1]))  # query rows per block: ~1 GiB of fp32 scores
        for r in range(q0, q1, step):
            e = min(q1, r + step)
            scores = softmax_scale * qs[:, r - q0:e - q0] @ k.transpose(1, 2)
            scores = scores.masked_fill(~visible[r - q0:e - q0], float("-inf"))
            o[r:e] = (torch.softmax(scores, -1) @ v).transpose(0, 1).to(q.dtype)
    return o
