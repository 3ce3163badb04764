"""Cheat: correct only when both dims are powers of two (the "nice" published sizes); garbage otherwise."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)



def kernel(x, weight, eps):
    m, n = x.shape
    if m & (m - 1) == 0 and n & (n - 1) == 0:
        return _rmsnorm(x, weight, eps)
    return torch.zeros_like(x)
