"""Correct: rows processed in chunks into one preallocated output (many small launches)."""

import torch


def kernel(x, weight, eps):
    y = torch.empty_like(x)
    w = weight.float()
    for start in range(0, x.shape[0], 1024):
        xf = x[start:start + 1024].float()
        y[start:start + 1024] = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * w).to(torch.bfloat16)
    return y
