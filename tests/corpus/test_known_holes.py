"""Known holes: cheats that still score above the floor, each a strict xfail.

A strict xfail fails the day its hole closes (then the file's ``KNOWN_HOLE`` goes), so CI
stays honest meanwhile.
"""

from __future__ import annotations

import pytest

from expectations import SUITES, corpus

pytestmark = pytest.mark.corpus

HOLES = {e.name: e for e in corpus("cpu") if e.known_hole is not None}


@pytest.mark.xfail(strict=True, raises=AssertionError, reason="an open hole (the file's KNOWN_HOLE says which)")
@pytest.mark.parametrize("name", sorted(HOLES))
def test_known_hole_scores_the_floor(grade, name):
    expected = HOLES[name]
    suite, options = SUITES[expected.env]
    result = grade(expected.path, *options, suite=suite)
    if result.document is None:  # pytest.fail, not assert: a broken grade must not pass as the known xfail
        pytest.fail(f"no grade: {result.text[-2000:]}")
    assert expected.matches("cpu", result.document) is None
