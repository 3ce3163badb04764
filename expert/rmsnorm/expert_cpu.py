"""Expert for rmsnorm on the CPU: the reference math in eager torch, rounded to bf16 once.

There is no production GPU kernel to compare against on a machine without a GPU; CPU
grades check correctness and report CPU times against this.
"""

import torch


def kernel(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
