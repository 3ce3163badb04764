"""The axpy expert: torch's fused multiply-add, in fp32, rounded once."""

import torch


def kernel(x, y, alpha):
    return torch.add(y.float(), x.float(), alpha=alpha).to(torch.bfloat16)
