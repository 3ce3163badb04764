"""A tensor-core reference that compiles at its first call of a shape (``compiles=True``) is
timed a second time where its first call lost to the plain one: the compile is paid once per
specialisation, and a shape must not keep the slower path for the whole grade because of it."""

from __future__ import annotations

import torch

from pytest_nodus.grader.exact_products import cross_checked


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def _paths(clock, calls):
    compiled = set()

    def plain(x):
        calls.append("plain")
        clock.now += 1.0
        return x * 2

    def fast(x):
        calls.append("fast")
        clock.now += 0.1 if x.shape in compiled else 5.0  # its first call compiles
        compiled.add(x.shape)
        return x * 2

    return fast, plain


def test_a_compiling_path_is_timed_again_and_kept_where_faster():
    clock, calls = Clock(), []
    reference = cross_checked(*_paths(clock, calls), "test", compiles=True, clock=clock)
    x = torch.randn(8, 3)
    reference(x)
    assert calls == ["plain", "fast", "fast"]
    calls.clear()
    reference(x)
    assert calls == ["fast"]


def test_without_compiles_the_first_time_is_the_judge():
    clock, calls = Clock(), []
    reference = cross_checked(*_paths(clock, calls), "test", clock=clock)
    x = torch.randn(8, 3)
    reference(x)
    calls.clear()
    reference(x)
    assert calls == ["plain"]
