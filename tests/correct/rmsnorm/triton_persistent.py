"""Correct: a persistent Triton grid (a fixed number of programs loop over the rows)."""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_persistent(x_ptr, w_ptr, y_ptr, M, N, eps, PROGRAMS: tl.constexpr, BLOCK: tl.constexpr):
    cols = tl.arange(0, BLOCK)
    mask = cols < N
    w = tl.load(w_ptr + cols, mask=mask, other=0.0).to(tl.float32)
    for row in range(tl.program_id(0), M, PROGRAMS):
        offsets = row * N + cols  # M * N <= 2^27 in this environment: int32 offsets suffice
        x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
        rstd = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / N + eps)
        tl.store(y_ptr + offsets, (x * rstd * w).to(tl.bfloat16), mask=mask)


def kernel(x, weight, eps):
    m, n = x.shape
    y = torch.empty_like(x)
    programs = min(m, 4 * torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 8)
    _rmsnorm_persistent[(programs,)](x, weight, y, m, n, eps, PROGRAMS=programs, BLOCK=triton.next_power_of_2(n),
                                     num_warps=8)
    return y
