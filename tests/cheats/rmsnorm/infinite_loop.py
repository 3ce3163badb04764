"""Cheat: never return (hangs the grade unless a per-call time limit kills it)."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("timeout", ("timeout",)), "cuda": ("timeout", ("timeout",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)



def kernel(x, weight, eps):
    while True:
        pass
