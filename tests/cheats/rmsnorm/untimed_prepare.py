"""Cheat: do the work in a prepare() hook (which the grader runs untimed for baselines) and only return it from kernel()."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import torch


def prepare(x, weight, eps):
    xf = x.float()
    return ((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16),)


def kernel(result, *ignored):
    return result.clone()  # called with the real inputs, this returns x: wrong
