"""Correct: two Triton kernels per call (row statistics, then the normalised write)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _row_rstd(x_ptr, rstd_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + row * N + cols, mask=cols < N, other=0.0).to(tl.float32)
    tl.store(rstd_ptr + row, 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps))


@triton.jit
def _apply(x_ptr, w_ptr, rstd_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = tl.load(rstd_ptr + row)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(tl.bfloat16), mask=mask)


def kernel(x, weight, eps):
    m, n = x.shape
    block = triton.next_power_of_2(n)
    rstd = torch.empty(m, dtype=torch.float32, device=x.device)
    y = torch.empty_like(x)
    _row_rstd[(m,)](x, rstd, n, eps, BLOCK=block, num_warps=8 if block >= 4096 else 4)
    _apply[(m,)](x, weight, rstd, y, n, BLOCK=block, num_warps=8 if block >= 4096 else 4)
    return y
