"""An exception from the kernel names the author's file and the lines of it that led there, no other frame."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade

KERNEL = '''import torch


def _tile_rows(x):
    if x.shape[0] > 2:
        raise ValueError("rows do not fit the tile")
    return x


def kernel(x, weight, eps):
    return _tile_rows(x).clone()
'''


def test_a_raised_error_shows_the_authors_frames(grade, tmp_path):
    submission = tmp_path / "tiles.py"
    submission.write_text(KERNEL)
    result = grade(submission, "-k", "public-0")
    raised = next(f for f in result.document["flags"] if f["code"] == "raised")
    assert raised["detail"].splitlines() == [
        "the kernel raised ValueError: rows do not fit the tile",
        "  tiles.py:11 in kernel: return _tile_rows(x).clone()",
        "  tiles.py:6 in _tile_rows: raise ValueError(\"rows do not fit the tile\")",
    ]
    assert "pytest_nodus" not in raised["detail"] and "kernel_under_test" not in result.text
