"""Baseline whose work is all in the untimed prepare(); kernel() only hands the result over.

prepare() also spins for PREPARE_SPIN_S of CPU time, so that a clock that wrongly took
prepare() in would read at least that much at every call: far above any scheduling noise
on a loaded CI machine, where the honest hand-over reads ~0.01 ms.
"""

import time

import torch

PREPARE_SPIN_S = 0.1


def prepare(x, weight, eps):
    end = time.perf_counter() + PREPARE_SPIN_S
    while time.perf_counter() < end:
        pass
    return (torch.nn.functional.rms_norm(x.float(), (x.shape[-1],), weight.float(), eps).to(x.dtype),)


def kernel(result):
    return result
