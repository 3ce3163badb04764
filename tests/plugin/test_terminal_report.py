"""The terminal report: one row per size, the flags, the reward."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_report_prints_table_and_says_what_cpu_times_mean(grade):
    result = grade(SOLUTION)
    result.outcome.stdout.fnmatch_lines([
        "*pytest-nodus grade*",
        "environment rmsnorm v1 | submission *solution.py (sha256 *) | cpu (*times are CPU times) | local check*",
        "CPU check: correctness on every size; the times compare the Triton interpreter with compiled torch*",
        "size*kind*status*error/tolerance*t_sub ms*t_exp ms*speedup*throughput",
        "public-0:M64xN256*public*correct*±*%*±*%*x*B/s",
        "fuzz (8 calls)*fuzz*correct*",
        "correct: CPU check passed on every size, no reward (CPU speedup *x, context only)",
    ])
    assert "seed" in result.text and "--nodus-seed=" in result.text
    rows = [line for line in result.outcome.stdout.lines if line.startswith("public-")]
    assert rows and not any(" 0.0 " in row or "0.000x" in row for row in rows)

