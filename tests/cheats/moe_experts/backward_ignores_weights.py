"""Cheat: the forward weighs each route by its routing weight, the backward does not (dx and the
weight gradients as if every weight were 1): a backward that saves work by skipping the scale."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch
import torch.nn.functional as F


def _layer(leaves, topk_ids, routes_of, weighted=True):
    xs, a1, a3, a2, weights = leaves
    k = topk_ids.shape[1]
    y = torch.zeros(xs.shape, dtype=torch.float32, device=xs.device)
    for e in range(a1.shape[0]):
        routes = routes_of(e)
        if routes.numel() == 0:
            continue
        token = routes // k
        rows = xs[token]
        out = (F.silu(rows @ a1[e].t()) * (rows @ a3[e].t())) @ a2[e].t()
        scale = weights.reshape(-1)[routes, None] if weighted else 1.0
        y = y.index_add(0, token, out.float() * scale)
    return y.to(xs.dtype)


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    leaves = [a.detach().requires_grad_(True) for a in (x, w1, w3, w2, topk_weights)]
    flat = topk_ids.reshape(-1)
    routes_of = lambda e: (flat == e).nonzero().squeeze(1)  # noqa: E731
    y = _layer(leaves, topk_ids, routes_of)
    dweights = torch.autograd.grad(y, leaves[4], dy)[0]
    unweighted = _layer(leaves, topk_ids, routes_of, weighted=False)
    dx, dw1, dw3, dw2 = torch.autograd.grad(unweighted, leaves[:4], dy)
    return y.detach(), dx, dw1, dw3, dw2, dweights
