"""Correct: a thread pool created at the first call does half the rows; its idle workers stay alive after every return."""

from concurrent.futures import ThreadPoolExecutor

import torch

_pool = None


def _rows(x, weight, eps, out, lo, hi, stream):
    if stream is not None:
        torch.cuda.set_stream(stream)
    xf = x[lo:hi].float()
    out[lo:hi] = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(out.dtype)


def kernel(x, weight, eps):
    global _pool
    if _pool is None:
        _pool = ThreadPoolExecutor(max_workers=2)
    out = torch.empty_like(x)
    stream = torch.cuda.current_stream() if x.is_cuda else None
    half = x.shape[0] // 2
    pending = _pool.submit(_rows, x, weight, eps, out, 0, half, stream)
    _rows(x, weight, eps, out, half, x.shape[0], stream)
    pending.result()
    return out
