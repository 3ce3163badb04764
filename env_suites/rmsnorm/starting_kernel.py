"""Starting kernel for rmsnorm: correct, simple and slow. Make it fast.

A 2-D grid: one program per (row, block of 1024 columns). Each program walks its whole row
to compute the row's sum of squares, then normalises only its own block, so every row is
read N/1024 + 1 times. The obvious first step is to compute each row's statistics once.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_block(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    block = tl.program_id(1)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, N, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
        acc += x * x
    rstd = 1.0 / tl.sqrt(tl.sum(acc, axis=0) / N + eps)
    cols = block * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(tl.bfloat16), mask=cols < N)


def kernel(x, weight, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    _rmsnorm_block[(m, triton.cdiv(n, 1024))](x, weight, y, n, eps, BLOCK=1024, num_warps=4)
    return y
