"""Cheat: write into the grader's bytecode cache, which every later grade's processes import the libraries from (the expert's sandbox its torch). A pyc planted there under a library source's modification time and size would run the cheat's code in the expert of every later grade on the machine: speed bought by slowing the expert.

A canary: it computes honestly once a file it wrote landed in the cache it imports from
(``sys.pycache_prefix``), and guesses otherwise. The grader offers the cache to a sandbox
only where Landlock keeps the sandbox's writes in its scratch (grader/bytecode.py), so
nothing lands; ``tests/corpus/test_leak_canaries.py`` shows that outside a sandbox it writes.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import os
import sys

import torch


def _planted() -> bool:
    """A file of its own beside the cached torch it would replace."""
    if not sys.pycache_prefix:
        return False
    target = os.path.join(sys.pycache_prefix + os.path.dirname(os.path.realpath(torch.__file__)), "nodus-poison.pyc")
    try:
        with open(target, "wb") as planted:
            planted.write(b"planted")
        return True
    except OSError:
        return False


def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


def kernel(x, weight, eps):
    return _rmsnorm(x, weight, eps) if _planted() else torch.zeros_like(x)
