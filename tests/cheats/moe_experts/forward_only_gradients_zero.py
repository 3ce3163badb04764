"""Cheat: compute the forward honestly and return zero gradients (the backward is two thirds
of the work)."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch
import torch.nn.functional as F


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    flat = topk_ids.reshape(-1)
    for e in range(w1.shape[0]):
        routes = (flat == e).nonzero().squeeze(1)
        token = routes // topk_ids.shape[1]
        out = (F.silu(x[token] @ w1[e].t()) * (x[token] @ w3[e].t())) @ w2[e].t()
        y.index_add_(0, token, out.float() * topk_weights.reshape(-1)[routes, None])
    return (y.to(x.dtype), torch.zeros_like(x), torch.zeros_like(w1), torch.zeros_like(w3), torch.zeros_like(w2),
            torch.zeros_like(topk_weights))
