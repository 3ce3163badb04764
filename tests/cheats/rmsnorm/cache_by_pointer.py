"""Cheat: cache outputs by input data pointer; a repeated address returns the stored answer."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


_cache = {}


def kernel(x, weight, eps):
    key = (x.data_ptr(), weight.data_ptr(), tuple(x.shape))
    if key not in _cache:
        _cache[key] = _rmsnorm(x, weight, eps)
    return _cache[key].clone()
