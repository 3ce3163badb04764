"""Correct: a helper thread started at import wakes every millisecond and goes back to sleep,
as the CUDA driver's own helper thread (cuda-EvtHandlr) does; it never touches a call's data."""

import threading
import time

import torch


def _tick():
    while True:
        time.sleep(0.001)


threading.Thread(target=_tick, daemon=True, name="ticker").start()


def kernel(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
