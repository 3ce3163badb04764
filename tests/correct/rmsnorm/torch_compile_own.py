"""Correct: its own formula compiled with torch.compile on the GPU (eager on the CPU)."""

import torch


def _formula(x, weight, eps: float):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


_compiled = torch.compile(_formula, dynamic=False) if torch.cuda.is_available() else _formula


def kernel(x, weight, eps):
    return _compiled(x, weight, eps)
