"""The terminal report: one row per size, the flags, the reward."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_report_prints_table_and_reward(grade):
    result = grade(SOLUTION)
    result.outcome.stdout.fnmatch_lines([
        "*pytest-nodus grade*",
        "environment rmsnorm v1 | submission *solution.py (sha256 *) | cpu (*times are CPU times) | local check*",
        "size*kind*status*error/tolerance*t_sub ms*t_exp ms*speedup*GB/s",
        "public-0:M64xN256*public*correct*",
        "fuzz (8 calls)*fuzz*correct*",
        "reward -* (status correct, speedup *",
    ])
    assert "seed" in result.text and "--nodus-seed=" in result.text

