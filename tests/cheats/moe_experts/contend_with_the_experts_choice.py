"""Cheat: leave the GPU busy after the first call at each size, while the expert chooses its path.

The MoE expert's first call at a shape times its eager layer against its compiled one and
keeps the faster for the rest of the grade (expert/moe_experts/expert_grouped_mm.py).
Timed while another context's kernels time-slice with it, either can lose, and the
slower path is then the one every timed call of the expert takes. So: honest gradients,
but after the first call at each shape a thread queues 30 s of spinning on a stream of its
own, past the harness's device-wide synchronise; the frozen sandbox's queued kernels keep
running. The grader shows the GPU idle of other contexts before the expert's set-up and
waits for it (grader/gpu_idle.py ``settle``); a spin that outlasts the wait loses the size.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
# Which wall ends it depends on where its spin lands: queued after the sandbox is frozen, the
# expert's set-up waits (gpu_contended); queued while the harness still answers the call or
# arms the next, that request is held past its limit (pending_work, grader/checks.py held),
# or past the call's limit (timeout).
EXPECT = {"cuda": (("error", "flagged"), ("gpu_contended", "timeout", "pending_work"))}

import threading
import time

import torch
import torch.nn.functional as F

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


def _layer(leaves, topk_ids):
    xs, a1, a3, a2, weights = leaves
    k = topk_ids.shape[1]
    flat = topk_ids.reshape(-1)
    y = torch.zeros(xs.shape, dtype=torch.float32, device=xs.device)
    for e in range(a1.shape[0]):
        routes = (flat == e).nonzero().squeeze(1)
        if routes.numel() == 0:
            continue
        token = routes // k
        rows = xs[token]
        out = (F.silu(rows @ a1[e].t()) * (rows @ a3[e].t())) @ a2[e].t()
        y = y.index_add(0, token, out.float() * weights.reshape(-1)[routes, None])
    return y.to(xs.dtype)


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    leaves = [a.detach().requires_grad_(True) for a in (x, w1, w3, w2, topk_weights)]
    y = _layer(leaves, topk_ids)
    dx, dw1, dw3, dw2, dweights = torch.autograd.grad(y, leaves, dy)
    if x.is_cuda and x.shape not in _shapes:
        _shapes.add(x.shape)
        _queue.set()
    return y.detach(), dx, dw1, dw3, dw2, dweights
