"""Baseline that raises on every call."""


def kernel(x, weight, eps):
    raise RuntimeError("this baseline is broken")
