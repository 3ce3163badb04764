"""On a GPU the norms' kernel (grader/norms.py) answers a dtype's norms only once its first
sum agreed with the chunk loop's; a kernel that fails to build or sums wrongly is dropped
with a warning, and the loop keeps every check right."""

from __future__ import annotations

import pytest
import torch

from pytest_nodus.grader import norms

KEY = ("cuda:0", torch.bfloat16)


@pytest.fixture(autouse=True)
def fresh_verdicts(monkeypatch):
    monkeypatch.setattr(norms, "_KERNEL_AGREES", {})


def _values():
    return torch.randn(10_000, generator=torch.Generator().manual_seed(0)).bfloat16()


def test_a_kernel_that_agrees_is_kept(monkeypatch):
    x = _values()
    want = float(x.double().pow(2).sum())
    monkeypatch.setattr(norms, "squares_by_blocks", lambda flat: flat.double().pow(2).sum())
    assert norms._first_on(KEY, x) == pytest.approx(want, rel=1e-12)
    assert norms._KERNEL_AGREES[KEY] is True


@pytest.mark.parametrize("kernel", [lambda flat: torch.tensor(1.0, dtype=torch.float64),
                                    lambda flat: (_ for _ in ()).throw(RuntimeError("no fp64 here"))],
                         ids=["sums wrongly", "fails to build"])
def test_a_kernel_that_does_not_agree_is_dropped_and_the_loop_answers(kernel, monkeypatch):
    x = _values()
    monkeypatch.setattr(norms, "squares_by_blocks", kernel)
    with pytest.warns(UserWarning, match="norms kernel is not used"):
        got = norms._first_on(KEY, x)
    assert got == pytest.approx(float(x.double().pow(2).sum()), rel=1e-12)
    assert norms._KERNEL_AGREES[KEY] is False
