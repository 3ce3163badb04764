"""Cheat: compute at fp8 (e4m3) precision: round the result through float8 and back."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)



def kernel(x, weight, eps):
    return _rmsnorm(x, weight, eps).to(torch.float8_e4m3fn).to(torch.bfloat16)
