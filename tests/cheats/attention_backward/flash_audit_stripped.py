"""Cheat: call torch's own FlashAttention-2 varlen backward (compiled into libtorch_cuda, so always loaded) with the window, and rewrite the kernel audit the harness reports so it names no flash kernel.

The audit runs in the submission's process and its report can be rewritten, and
libtorch_cuda.so cannot be made unreadable the way cuDNN's libraries are (every sandbox has
it mapped): without more, this grades correct at 0.787x cuDNN. The sandbox overwrites the
fatbins holding these kernels before the submission is imported (sandbox/fatbin_removal.py), so
the launch fails: the kernel image is invalid.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cuda": ("error", ("raised",))}

import re
import sys

import torch

HIDE = r"(?i)flash|fmha|_scaled_dot_product|efficient_attention"
_stripped = False


def _strip_audit() -> None:
    """Wrap the harness's finish handler (a local of its request loop) so the audit it
    reports names no attention-library kernel."""
    global _stripped
    frame = sys._getframe(1)
    while frame is not None:
        handlers = frame.f_locals.get("handlers")
        if isinstance(handlers, dict) and "finish" in handlers:
            genuine = handlers["finish"]

            def finish(message):
                reply = genuine(message)
                audit = reply.get("audit")
                if isinstance(audit, dict):
                    audit["ops"] = [op for op in audit.get("ops", []) if not re.search(HIDE, op)]
                    audit["kernels"] = [k for k in audit.get("kernels", []) if not re.search(HIDE, str(k.get("name")))]
                return reply

            handlers["finish"] = finish
            _stripped = True
            return
        frame = frame.f_back


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    if not _stripped:
        _strip_audit()
    seq = cu_seqlens.to(torch.int32)
    left = window - 1 if window > 0 else -1
    rng = torch.zeros(2, dtype=torch.int64, device=q.device)
    unused = torch.empty(0, device=q.device)
    dq, dk, dv = torch.ops.aten._flash_attention_backward(
        do, q, k, v, o, lse, seq, seq, max_seqlen, max_seqlen, 0.0, True, rng, unused,
        scale=softmax_scale, window_size_left=left, window_size_right=0)
    return dq, dk, dv
