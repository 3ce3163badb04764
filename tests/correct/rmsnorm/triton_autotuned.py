"""Correct: an autotuned Triton kernel (configs benchmarked on the first call of each width)."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({}, num_warps=w) for w in (2, 4, 8)], key=["BLOCK"])
@triton.jit
def _rmsnorm(x_ptr, w_ptr, y_ptr, N, eps, BLOCK: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    x = tl.load(x_ptr + row * N + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * N + cols, (x * rstd * w).to(tl.bfloat16), mask=mask)


def kernel(x, weight, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    _rmsnorm[(m,)](x, weight, y, n, eps, BLOCK=triton.next_power_of_2(n))
    return y
