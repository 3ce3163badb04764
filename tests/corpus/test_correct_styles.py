"""False positives: correct kernels of every style (thirteen of rmsnorm, and attention's) pass three sealed reruns."""

from __future__ import annotations

import pytest
from conftest import CORRECT

pytestmark = pytest.mark.corpus


def test_false_positive_set_is_large_enough():
    assert len(list((CORRECT / "rmsnorm").glob("*.py"))) >= 10


@pytest.mark.parametrize("kernel", sorted(p.stem for p in (CORRECT / "rmsnorm").glob("*.py")))
def test_correct_kernel_styles_pass_three_sealed_reruns(grade, kernel):
    result = grade(CORRECT / "rmsnorm" / f"{kernel}.py", "--nodus-reruns=3", sealed=True)
    assert result.document["reruns"]["statuses"] == ["correct"] * 3, result.document["flags"]



@pytest.mark.parametrize("kernel", sorted(p.stem for p in (CORRECT / "attention_backward").glob("*.py")
                                          if p.stem != "torch_dense"))  # torch_dense: tests/plugin
def test_correct_attention_styles_pass_three_sealed_reruns(grade, kernel):
    result = grade(CORRECT / "attention_backward" / f"{kernel}.py", "--nodus-reruns=3", env="attention_backward",
                   sealed=True)
    assert result.document["reruns"]["statuses"] == ["correct"] * 3, result.document["flags"]
