"""Cheat: return a correct output, then leave the GPU spinning forever on the current stream, so the grader's clock never closes unless the grader frees it.

A hang on the device, not on the host: the call returns at once and the harness's copy into
the receipts (and the flag that ends the grader's window) queue behind the spin. The grader
must time out, free its own stream and grade -24, and the next sizes must still run.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cuda": ("timeout", ("timeout",))}

import torch


def kernel(x, weight, eps):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    torch.cuda._sleep(1 << 62)  # cycles: longer than any call limit
    return y
