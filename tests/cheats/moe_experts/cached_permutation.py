"""Cheat: the routes' permutation by expert computed on the first call of a shape and reused
after: right on that first call, wrong once the routing changes (it is drawn per call)."""

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


_permutations: dict[tuple, list] = {}


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    leaves = [a.detach().requires_grad_(True) for a in (x, w1, w3, w2, topk_weights)]
    shape = (tuple(topk_ids.shape), w1.shape[0])
    if shape not in _permutations:
        flat = topk_ids.reshape(-1)
        _permutations[shape] = [(flat == e).nonzero().squeeze(1) for e in range(w1.shape[0])]
    y = _layer(leaves, topk_ids, lambda e: _permutations[shape][e])
    return (y.detach(), *torch.autograd.grad(y, leaves, dy, allow_unused=True, materialize_grads=True))
