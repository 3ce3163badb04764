"""An expert that dies (os._exit) on its third call."""

import os

import torch

_calls = 0


def kernel(x, weight, eps):
    global _calls
    _calls += 1
    if _calls == 3:
        os._exit(3)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
