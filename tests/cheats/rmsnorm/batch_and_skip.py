"""Cheat: batch ahead. Reach through the input's storage to the other input slot, compute its
answer during this call, and return that answer next call without working (batch-and-skip)."""

import torch

_ahead = {}


def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


def kernel(x, weight, eps):
    key = (x.data_ptr(), tuple(x.shape))
    answer = _ahead.pop(key, None)
    storage = x.untyped_storage()
    half = storage.nbytes() // 2 // 1024 * 1024
    offset_bytes = x.data_ptr() - storage.data_ptr()
    other = (offset_bytes + half) % (2 * half)
    if other + x.numel() * 2 <= storage.nbytes():
        # What lies there now is whatever the grader will call next (it hopes).
        nxt = torch.empty(0, dtype=x.dtype, device=x.device).set_(storage, other // 2, x.shape)
        _ahead[(storage.data_ptr() + other, tuple(x.shape))] = _rmsnorm(nxt, weight, eps)
    return answer if answer is not None else _rmsnorm(x, weight, eps)
