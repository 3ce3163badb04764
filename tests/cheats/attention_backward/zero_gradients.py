"""Cheat: return all-zero gradients, the trivial output that a tolerance loose in absolute terms would accept for small-magnitude gradients.

Tolerances are relative to each reference's norm, so zeros are an error of 1.0.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("flagged", ("below_physical_floor", "wrong_values"))}

import torch


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    return torch.zeros_like(q), torch.zeros_like(k), torch.zeros_like(v)
