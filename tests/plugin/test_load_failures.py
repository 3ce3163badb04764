"""A kernel file that does not load grades error, in one line."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade


def test_unloadable_submission_grades_error_with_one_line(grade, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("def kernel(x, weight, eps)\n    return x\n")
    result = grade(broken)
    assert result.document["status"] == "error" and result.document["reward"] == -24
    assert "load_failed" in result.codes
    assert "SyntaxError" in result.text and "(line 1)" in result.text


def test_missing_entry_point(grade, tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n")
    result = grade(empty)
    assert "load_failed" in result.codes
    assert "defines no callable 'kernel'" in result.text

