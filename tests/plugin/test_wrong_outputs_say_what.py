"""A wrong output says what is wrong: the shape it has and should have, or its worst element; the
flag and the table name the same error."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade

WIDE = '''import torch


def kernel(x, weight, eps):
    return torch.zeros(x.shape[0], x.shape[1] + 1, dtype=x.dtype)
'''

# Right everywhere but one element, which is wrong by more on some calls than on others.
ONE_BAD_ELEMENT = '''import torch


def kernel(x, weight, eps):
    y = x.float()
    y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + eps) * weight.float()
    y[-1, -1] += float(torch.rand(()) * 4 + 1)
    return y.to(x.dtype)
'''


def test_a_wrong_shape_names_both_shapes(grade, tmp_path):
    submission = tmp_path / "wide.py"
    submission.write_text(WIDE)
    result = grade(submission, "-k", "public-0")
    shape = next(f for f in result.document["flags"] if f["code"] == "wrong_shape")
    assert shape["detail"] == "output 0 has shape (64, 257), expected (64, 256)"


def test_wrong_values_name_the_worst_element_and_agree_with_the_table(grade, tmp_path):
    submission = tmp_path / "one_bad.py"
    submission.write_text(ONE_BAD_ELEMENT)
    result = grade(submission, "-k", "public-0")
    size = next(s for s in result.document["sizes"] if s["id"].startswith("public-0"))
    wrong = next(f for f in result.document["flags"] if f["code"] == "wrong_values")
    assert f"error {size['error']:.3g} > tolerance {size['tolerance']:.3g}" in wrong["detail"]
    assert "; worst element [63, 255] got " in wrong["detail"] and ", expected " in wrong["detail"]
