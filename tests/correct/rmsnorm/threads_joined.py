"""Correct: the rows split over two threads, joined before the call returns (both on the caller's stream on the GPU)."""

import threading

import torch


def _rows(x, weight, eps, out, lo, hi, stream):
    with torch.cuda.stream(stream) if stream is not None else _nothing():
        xf = x[lo:hi].float()
        out[lo:hi] = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(out.dtype)


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def kernel(x, weight, eps):
    out = torch.empty_like(x)
    stream = torch.cuda.current_stream() if x.is_cuda else None
    half = x.shape[0] // 2
    workers = [threading.Thread(target=_rows, args=(x, weight, eps, out, lo, hi, stream))
               for lo, hi in ((0, half), (half, x.shape[0]))]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return out
