"""A tensor-core reference answers only where it agrees with the plain fp32 one: both run at
each new set of shapes, and a disagreement or a failure hands every later call to the plain
one, with a warning. A GPU whose tensor cores sum otherwise can slow a grade, never change a
verdict."""

from __future__ import annotations

import pytest
import torch

from pytest_nodus.grader.exact_products import CROSS_CHECK_LIMIT, cross_checked


class Clock:
    """Seconds that pass only when a Counted function says it took them."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


class Counted:
    def __init__(self, fn, clock=None, seconds=0.0):
        self.fn, self.calls, self.clock, self.seconds = fn, 0, clock, seconds

    def __call__(self, *args, **kwargs):
        self.calls += 1
        if self.clock is not None:
            self.clock.now += self.seconds
        return self.fn(*args, **kwargs)


def plain_math(x, scale=1.0):
    return (x.double() * scale).float(), x.sum()


def test_an_agreeing_faster_reference_answers_after_one_check():
    clock = Clock()
    plain = Counted(plain_math, clock, seconds=2.0)
    fast = Counted(lambda x, scale=1.0: (x * scale, x.sum()), clock, seconds=1.0)
    reference = cross_checked(fast, plain, "test", clock=clock)
    x = torch.randn(8, 4)
    for _ in range(3):
        reference(x)
    assert (plain.calls, fast.calls) == (1, 3)
    reference(torch.randn(5, 4))  # new shapes: checked again
    reference(x, scale=2.0)  # another scalar: checked again
    assert (plain.calls, fast.calls) == (3, 5)


def test_a_disagreeing_fast_reference_hands_over_for_good():
    plain = Counted(plain_math)
    fast = Counted(lambda x, scale=1.0: (x * (1 + 10 * CROSS_CHECK_LIMIT), x.sum()))
    reference = cross_checked(fast, plain, "test")
    x = torch.randn(8, 4) + 3
    with pytest.warns(RuntimeWarning, match="from the plain fp32 one"):
        out, _ = reference(x)
    assert torch.equal(out, plain_math(x)[0])
    reference(x)
    reference(torch.randn(2, 2))
    assert (plain.calls, fast.calls) == (3, 1)


def test_a_failing_fast_reference_hands_over_for_good():
    def broken(x, scale=1.0):
        raise RuntimeError("no bf16 products with fp32 sums here")

    plain, fast = Counted(plain_math), Counted(broken)
    reference = cross_checked(fast, plain, "test")
    x = torch.randn(3, 3)
    with pytest.warns(RuntimeWarning, match="failed"):
        out, _ = reference(x)
    assert torch.equal(out, plain_math(x)[0])
    reference(x)
    assert (plain.calls, fast.calls) == (2, 1)
