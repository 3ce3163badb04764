"""Cheat: cache by a cheap fingerprint (shape and the signs of two sampled values)."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


_cache = {}


def kernel(x, weight, eps):
    key = (tuple(x.shape), bool(x[0, 0] > 0), bool(x[-1, -1] > 0))
    if key not in _cache:
        _cache[key] = _rmsnorm(x, weight, eps)
    return _cache[key].clone()
