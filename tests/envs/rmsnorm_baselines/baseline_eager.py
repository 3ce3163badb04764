"""Baseline: eager torch RMSNorm."""

import torch


def kernel(x, weight, eps):
    return torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype)
