"""Cheat: sys.exit(0) in the middle of the grade, hoping a runner reads exit status 0 as success."""

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


import sys


def kernel(x, weight, eps):
    sys.exit(0)
