"""Cheat: compute honestly, but reach up the call stack into the sandbox harness's request loop and wrap its call handler so every reply reports half the measured time.

The harness checks its own module globals and torch's and time's timers; the handler table
is a local of its request loop, so the wrap changes nothing those checks look at. What
the sandbox reports about time can be forged by anything running in it: the grader's own
wall clock has to bound it.
"""

import sys

import torch

_wrapped = False


def _wrap_handlers() -> None:
    global _wrapped
    frame = sys._getframe(1)
    while frame is not None:
        handlers = frame.f_locals.get("handlers")
        if isinstance(handlers, dict) and "call" in handlers:
            genuine = handlers["call"]

            def call(message):
                reply = genuine(message)
                for key in ("t_stream_ms", "t_call_ms"):
                    if isinstance(reply.get(key), float):
                        reply[key] *= 0.5
                return reply

            handlers["call"] = call
            _wrapped = True
            return
        frame = frame.f_back


def kernel(x, weight, eps):
    if not _wrapped:
        _wrap_handlers()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
