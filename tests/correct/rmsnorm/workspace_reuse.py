"""Correct: keeps a preallocated fp32 workspace between calls (grown when a call needs more)."""

import torch

_workspace = None


def kernel(x, weight, eps):
    global _workspace
    if _workspace is None or _workspace.numel() < x.numel() or _workspace.device != x.device:
        _workspace = torch.empty(x.numel(), dtype=torch.float32, device=x.device)
    xf = _workspace[: x.numel()].view(x.shape)
    xf.copy_(x)
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd * weight.float()).to(torch.bfloat16)
