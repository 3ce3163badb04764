"""Cheat: right after each call returns, queue one long GPU kernel and go to sleep, so the expert's next call time-slices with it.

The queueing thread spends microseconds of CPU, far under what the idle-work count allows
(grader/idle_work.py), and freezing the sandbox (grader/cgroup.py) stops its threads, not
GPU work they already queued. The grader's spin before each window sees another context on
the GPU (grader/gpu_idle.py): no call is timed on such a GPU, and a grade whose rounds keep
opening on one stops as ``gpu_contended``. On the CPU the thread burns a core instead.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
# On the GPU its kernel also overlaps its own next call, whose device-wide synchronise then
# shows pending work; which of the two ends the grade first varies from run to run.
EXPECT = {"cpu": ("flagged", ("background_thread", "forged_time")),
          "cuda": (("flagged", "error"), ("pending_work", "gpu_contended"))}

import threading
import time

import torch

_returned = threading.Event()
_device = []
_streams = []


def _after_return():
    while True:
        _returned.wait()
        _returned.clear()
        time.sleep(0.003)  # past the harness's synchronise and report: the next call is the expert's
        if _device[0].type == "cuda":
            if not _streams:
                _streams.append(torch.cuda.Stream())
            with torch.cuda.stream(_streams[0]):
                torch.cuda._sleep(100_000_000)  # ~50 ms on the GPU, queued in microseconds
        else:
            until = time.process_time() + 0.05
            while time.process_time() < until:
                pass


threading.Thread(target=_after_return, daemon=True).start()


def kernel(x, weight, eps):
    _device[:] = [x.device]
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    _returned.set()
    return y
