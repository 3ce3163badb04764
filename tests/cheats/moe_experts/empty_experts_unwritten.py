"""Cheat: the weight gradients are written expert by expert into uninitialised buffers, and
the experts no route chose are skipped: their gradients should be zeros and hold whatever
the memory held (a kernel that launches only over experts with routes)."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
# Only sizes with empty experts (skew 2) can tell; the grader fills free memory with NaN
# before every call, so what the skipped experts hold is never zeros by luck: the NaN
# itself (non_finite_output) or, where the allocator hands out other memory, its garbage.
EXPECT = {"cpu": ("wrong", ("wrong_values", "non_finite_output")),
          "cuda": ("wrong", ("wrong_values", "non_finite_output"))}

import torch
import torch.nn.functional as F


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    k = topk_ids.shape[1]
    flat = topk_ids.reshape(-1).long()
    leaves = [a.detach().requires_grad_(True) for a in (x, w1, w3, w2, topk_weights)]
    xs, a1, a3, a2, weights = leaves
    y = torch.zeros(x.shape, dtype=torch.float32, device=x.device)
    used = []
    for e in range(w1.shape[0]):
        routes = (flat == e).nonzero().squeeze(1)
        if routes.numel() == 0:
            continue
        used.append(e)
        token = routes // k
        rows = xs[token]
        out = (F.silu(rows @ a1[e].t()) * (rows @ a3[e].t())) @ a2[e].t()
        y = y.index_add(0, token, out.float() * weights.reshape(-1)[routes, None])
    y = y.to(x.dtype)
    dx, dw1, dw3, dw2, dweights = torch.autograd.grad(y, leaves, dy, allow_unused=True, materialize_grads=True)
    grads = []
    for full in (dw1, dw3, dw2):
        out = torch.empty_like(full)
        out[used] = full[used]
        grads.append(out)
    return (y.detach(), dx, *grads, dweights)
