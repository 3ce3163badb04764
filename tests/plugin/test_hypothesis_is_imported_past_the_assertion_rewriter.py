"""The grader imports Hypothesis as plain Python: pytest's assertion rewriter, which would
rewrite its modules again in every grading process of a host that writes no bytecode,
rewrites none of them (grader/plain_import.py)."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

# Loaded into the grading process with -p: which Hypothesis modules it holds at the end, and
# which of them carry the names pytest's rewriter adds to every module it rewrites.
PROBE = '''
import json
import sys
from pathlib import Path


def pytest_sessionfinish(session):
    names = sorted(n for n, m in list(sys.modules.items()) if n.split(".")[0] == "hypothesis" and m is not None)
    rewritten = [n for n in names if "@py_builtins" in vars(sys.modules[n])]
    Path("hypothesis_modules.json").write_text(json.dumps({"imported": names, "rewritten": rewritten}))
'''


def test_no_hypothesis_module_is_rewritten(grade, pytester):
    pytester.makepyfile(nodus_rewrite_probe=PROBE)
    graded = grade(REPO / "expert" / "rmsnorm" / "solution.py", "--nodus-seed=5", "-k", "fuzzed",
                   "-p", "nodus_rewrite_probe")
    assert any(s["kind"] == "fuzz" for s in graded.document["sizes"])  # the fuzz ran, so Hypothesis was used
    seen = json.loads((pytester.path / "hypothesis_modules.json").read_text())
    assert "hypothesis.core" in seen["imported"]
    assert seen["rewritten"] == []
