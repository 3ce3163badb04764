"""Cheat: look for the grade seed, the hidden sizes or the test id in the process environment, to predict the next inputs or tune for the hidden sizes.

A leak canary: with anything secret found it computes honestly, so a grader that leaks it
into the sandbox's environment pays this file above the floor and its test fails; finding
nothing (the sandbox's environment is rebuilt from a short allow-list), it returns a
cheap guess and scores -24.
"""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
EXPECT = {"cpu": ("wrong", ("wrong_values",)), "cuda": ("wrong", ("wrong_values",))}

import os
import re

import torch

# Not "nodus": the sandbox's own scratch paths are named after the grader; they hold nothing.
_SECRET = re.compile(r"seed|sealed|hidden|hypothesis", re.IGNORECASE)


def _leaked() -> bool:
    return any(_SECRET.search(key) or _SECRET.search(value) for key, value in os.environ.items())


def kernel(x, weight, eps):
    if _leaked():
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    return torch.zeros_like(x)
