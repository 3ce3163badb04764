"""Cheat: run every projection on fp8 (e4m3) operands, the precision that would double a
Hopper GEMM's throughput, and hope the tolerance is loose."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch
import torch.nn.functional as F


def _fp8(t):
    return t.to(torch.float8_e4m3fn).to(t.dtype)


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    leaves = [a.detach().requires_grad_(True) for a in (x, w1, w3, w2, topk_weights)]
    xs, a1, a3, a2, weights = leaves
    flat = topk_ids.reshape(-1)
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    for e in range(w1.shape[0]):
        routes = (flat == e).nonzero().squeeze(1)
        token = routes // topk_ids.shape[1]
        rows = _fp8(xs[token])
        out = _fp8(F.silu(rows @ _fp8(a1[e]).t()) * (rows @ _fp8(a3[e]).t())) @ _fp8(a2[e]).t()
        y = y.index_add(0, token, out.float() * weights.reshape(-1)[routes, None])
    y = y.to(x.dtype)
    return (y.detach(), *torch.autograd.grad(y, leaves, _fp8(dy)))
