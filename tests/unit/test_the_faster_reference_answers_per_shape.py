"""Where both references agree, each set of shapes keeps the one that took less time at its
first call: the tensor-core path where its products dominate, the plain one elsewhere."""

from __future__ import annotations

import torch

from pytest_nodus.grader.exact_products import cross_checked


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_each_shape_keeps_the_reference_that_was_faster_there():
    clock, calls = Clock(), []

    def costs(name, seconds_per_row):
        def run(x):
            calls.append((name, x.shape[0]))
            clock.now += seconds_per_row(x.shape[0])
            return x.double().float() * 2
        return run

    # The tensor-core path pays a fixed cost and then less per row: slower at 4 rows, faster at 64.
    plain = costs("plain", lambda rows: 1.0 * rows)
    fast = costs("fast", lambda rows: 20.0 + 0.5 * rows)
    reference = cross_checked(fast, plain, "test", clock=clock)
    small, large = torch.randn(4, 3), torch.randn(64, 3)
    for x in (small, large):
        assert torch.equal(reference(x), x * 2)  # the first call runs both
    calls.clear()
    for x in (small, large, small):
        assert torch.equal(reference(x), x * 2)
    assert calls == [("plain", 4), ("fast", 64), ("plain", 4)]
