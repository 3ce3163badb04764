"""Cheat: compute correctly, then overwrite the input (scratch space the grader should not notice)."""

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)



def kernel(x, weight, eps):
    y = _rmsnorm(x, weight, eps)
    x.zero_()
    return y
