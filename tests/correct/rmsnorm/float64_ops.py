"""Correct: computes in float64, rounds once to bf16 (more precise than asked)."""

import torch


def kernel(x, weight, eps):
    xd = x.double()
    return (xd / torch.sqrt(xd.pow(2).mean(-1, keepdim=True) + eps) * weight.double()).to(torch.bfloat16)
