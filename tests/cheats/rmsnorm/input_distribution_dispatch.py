"""Cheat: probe one row; when it looks unit-scale (as plain randn inputs would), skip the normalisation and return x * weight, honest otherwise.

Plain standard-normal rows have an RMS within about 1% of 1, so x * weight would pass a 1e-2
tolerance on them. The grader's inputs scale every row by its own factor spread over
orders of magnitude (and some rows to where eps matters), so the shortcut is taken on some
calls and is wrong on nearly every row it touches.
"""

import torch


def kernel(x, weight, eps):
    xf = x.float()
    probe = xf[0].pow(2).mean().sqrt().item()
    if 0.5 < probe < 2.0:
        return (xf * weight.float()).to(torch.bfloat16)
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
