"""Cheat: the GPU memory hoard of hold_gpu_memory.py, taken from the driver itself
(``cuMemAlloc``) at the first call, behind torch's back: torch's allocator, its statistics and
any per-process fraction set inside the sandbox see none of it.

The driver charges it to the sandbox's process all the same, and the grader reads the
driver's count from outside (grader/gpu_memory_wall.py).
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cuda": ("error", ("over_limit",))}

import ctypes

import torch

HOLD_BYTES = 14 << 30  # as hold_gpu_memory.py: twice the budget and its allowance
_held = []


def _hoard() -> None:
    cuda = ctypes.CDLL("libcuda.so.1")  # already loaded by torch: the same library
    pointer = ctypes.c_uint64(0)
    if cuda.cuMemAlloc_v2(ctypes.byref(pointer), ctypes.c_size_t(HOLD_BYTES)) == 0:
        cuda.cuMemsetD8_v2(pointer, ctypes.c_ubyte(1), ctypes.c_size_t(HOLD_BYTES))  # every page backed
        _held.append(pointer.value)


def kernel(x, weight, eps):
    if not _held and x.is_cuda:
        _hoard()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
