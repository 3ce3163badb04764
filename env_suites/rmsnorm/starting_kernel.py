"""Starting kernel for rmsnorm: correct, simple and slow. Make it fast.

One Triton program per row walks the row in chunks of 256 twice (sum of squares, then the
normalised write) with a single warp.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_row(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
        tl.store(y_ptr + row * N + cols, (x * rstd * w).to(tl.bfloat16), mask=cols < N)


def kernel(x, weight, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    _rmsnorm_row[(m,)](x, weight, y, n, eps, BLOCK=256, num_warps=1)
    return y
