"""Cheat: raise pytest.skip so the size is skipped instead of failed."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("error", ("raised",)), "cuda": ("error", ("raised",))}

import torch

def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


import pytest


def kernel(x, weight, eps):
    pytest.skip("no GPU here")
