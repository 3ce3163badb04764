"""Cheat: torch's FlexAttention (its Triton templates, compiled by inductor in the submission's own process) with a block mask for the documents and the window, forward recomputed under autograd, and the audit report rewritten so it names no flex kernel.

The kernels are generated in the sandbox from templates that ship with torch as readable
files, so neither Landlock on a library nor the fatbin removal keeps them out, and the
audit that names them is the submission's own report. From shared/GPU.md's figures
(FlexAttention 263 and 103 TF/s against cuDNN's 313 and 251 at D = 128 and 256) it would be
paid about log2(0.6), well above the floor. Now the submission's inductor builds those
templates from a stub and their files are unreadable (pytest_nodus.templates): there is no
flex kernel to generate. Not yet graded on the H200.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cuda": ("error", ("raised",))}

import re
import sys

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

_compiled = torch.compile(flex_attention, dynamic=False)
HIDE = r"(?i)flex|triton_tem|_scaled_dot_product"
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


def _gradients(q, k, v, do, cu_seqlens, window, softmax_scale, attend):
    T = q.shape[0]
    document = torch.searchsorted(cu_seqlens.to(torch.int64), torch.arange(T, device=q.device), right=True)

    def visible(b, h, i, j):
        seen = (document[i] == document[j]) & (j <= i)
        return seen & (i - j < window) if window > 0 else seen

    mask = create_block_mask(visible, None, None, T, T, device=q.device)
    qh, kh, vh = (t.transpose(0, 1).unsqueeze(0).detach().requires_grad_() for t in (q, k, v))
    with torch.enable_grad():
        out = attend(qh, kh, vh, block_mask=mask, scale=softmax_scale, enable_gqa=True)
        dq, dk, dv = torch.autograd.grad(out, (qh, kh, vh), do.transpose(0, 1).unsqueeze(0))
    return tuple(g[0].transpose(0, 1).contiguous().to(torch.bfloat16) for g in (dq, dk, dv))


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    if not _stripped:
        _strip_audit()
    return _gradients(q, k, v, do, cu_seqlens, window, softmax_scale, _compiled)
