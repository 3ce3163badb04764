"""Cheat: leave the GPU busy right after the first call at each size, while the expert sets up.

The expert's first call at a size is its set-up: torch.compile's inductor times several
reduction configurations and keeps the fastest (the MoE expert times eager against
compiled), and the persistent compile cache keeps the choice for later grades. Timed beside
another context's kernels, the best candidate can lose, and the expert stays slower for the
whole grade. So: honest calls, but after the first call at each shape a thread queues 30 s of
spinning on a stream of its own, past the harness's device-wide synchronise, in
microseconds of CPU (far under the idle-work allowance); the sandbox is then frozen, but
its queued GPU work is not. The grader shows the GPU idle of other contexts before the
expert's set-up and waits for it (grader/gpu_idle.py ``settle``): a short spin is waited out
and buys nothing; one that outlasts the wait loses the size as ``gpu_contended``. On the CPU
nothing runs between calls of a frozen sandbox, so there is nothing to cheat with.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
# Which wall ends it depends on whether its thread queues the spin before the sandbox is
# frozen: then the expert's set-up waits and the size stops as gpu_contended; else the spin is
# queued at its next request, whose synchronise waits past the call limit (timeout) or, under
# a longer limit, past the limit of a request that runs no kernel code (pending_work).
EXPECT = {"cuda": (("error", "timeout", "flagged"), ("gpu_contended", "timeout", "pending_work"))}

import threading
import time

import torch

_shapes = set()
_queue = threading.Event()
_streams = []


def _spin_after_return():
    while True:
        _queue.wait()
        _queue.clear()
        time.sleep(0.003)  # past the harness's synchronise and report: the expert is next
        if not _streams:
            _streams.append(torch.cuda.Stream())
        with torch.cuda.stream(_streams[0]):
            for _ in range(60):
                torch.cuda._sleep(1_000_000_000)  # ~0.5 s each at ~2 GHz: 30 s queued at once


threading.Thread(target=_spin_after_return, daemon=True).start()


def kernel(x, weight, eps):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    if x.is_cuda and x.shape not in _shapes:
        _shapes.add(x.shape)
        _queue.set()
    return y
