"""A kernel file that does not load is reported once, at once, at its own file and line, and not shrunk."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade


@pytest.mark.parametrize("xdist_workers", [0, 2], ids=["plain", "xdist2"])
def test_a_syntax_error_is_reported_once_at_the_authors_line(grade, tmp_path, xdist_workers):
    broken = tmp_path / "my_kernel.py"
    broken.write_text("import torch\n\ndef kernel(x, weight, eps)\n    return x\n")
    result = grade(broken, xdist=xdist_workers)
    document = result.document
    assert document["status"] == "error" and document["reward"] == -24 and result.outcome.ret == 1
    failures = [f for f in document["flags"] if f["code"] == "load_failed"]
    assert 1 <= len(failures) <= max(1, xdist_workers), document["flags"]  # once per worker at most
    assert failures[0]["detail"].splitlines() == ["SyntaxError: expected ':'",
                                                  "  my_kernel.py:3 in <module>: def kernel(x, weight, eps)"]
    assert "kernel_under_test" not in result.text and "(line" not in result.text
    assert "smallest_failing_size" not in result.codes  # the same at every size: nothing to shrink
    assert document["not_graded"] > 0 and "no size can be graded" in result.text
    if not xdist_workers:
        assert len(document["sizes"]) == 1 and result.text.count("FAILED ") == 1


def test_a_missing_entry_point_is_reported_once(grade, tmp_path):
    empty = tmp_path / "empty.py"
    empty.write_text("def kern(x, weight, eps):\n    return x\n")
    result = grade(empty)
    assert [f["code"] for f in result.document["flags"]] == ["load_failed"]
    assert "the file defines no callable 'kernel'" in result.text
    assert result.document["wall_s"] < 20  # one sandbox start, no shrinking, no fuzzing
