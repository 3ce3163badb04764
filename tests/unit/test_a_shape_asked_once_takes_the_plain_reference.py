"""A fuzzed size asks its reference once: inside ``exact_products.once()`` the plain fp32
reference answers alone, with no tensor-core compile and no cross-check, and nothing is
recorded for that shape, so a later size of the same shape is cross-checked as usual."""

from __future__ import annotations

import torch

from pytest_nodus.grader import exact_products
from pytest_nodus.grader.exact_products import cross_checked


def test_inside_once_only_the_plain_path_runs_and_nothing_is_remembered():
    calls = []

    def path(name):
        def run(x):
            calls.append(name)
            return x * 2
        return run

    reference = cross_checked(path("fast"), path("plain"), "test")
    x = torch.randn(8, 3)
    exact_products.answered()  # forget earlier tests' answers
    with exact_products.once():
        assert torch.equal(reference(x), x * 2)
    assert calls == ["plain"] and exact_products.answered() == ["plain"]
    calls.clear()
    reference(x)  # the same shape outside: its first cross-checked call runs both
    assert sorted(calls) == ["fast", "plain"]
