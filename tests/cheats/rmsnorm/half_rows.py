"""Cheat: normalise only the first half of the rows; the rest of the buffer is never written."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("non_finite_output", "wrong_values")), "cuda": ("wrong", ("non_finite_output",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)



def kernel(x, weight, eps):
    y = torch.empty_like(x)
    half = x.shape[0] // 2
    y[:half] = _rmsnorm(x[:half], weight, eps)
    return y
