"""A size whose worker died counts as a failed size of its own rerun."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def _worker_killer(pytester, nodeid_part: str) -> None:
    """A plugin, ``-p worker_killer``, that kills the xdist worker running the test whose
    node id contains ``nodeid_part``."""
    pytester.makepyfile(worker_killer=f"""
        import os

        def pytest_runtest_call(item):
            if {nodeid_part!r} in item.nodeid and os.environ.get("PYTEST_XDIST_WORKER"):
                os._exit(1)
    """)
    pytester.syspathinsert()


def test_a_worker_that_dies_counts_as_a_failed_size(grade, pytester):
    # The worker running public-1 dies: that size must fail the grade.
    _worker_killer(pytester, "public-1")
    result = grade(SOLUTION, "-p", "worker_killer", xdist=2)
    assert result.document["status"] == "error" and result.document["reward"] == -24
    died = [f for f in result.document["flags"] if f["code"] == "no_result"]
    assert [f["size"] for f in died] == ["public-1:M33xN1000"], result.document["flags"]


def test_a_size_lost_in_a_later_rerun_counts_against_that_rerun(grade, pytester):
    # Run 32: sizes of rerun 2 that produced no result were filed under rerun 0 with their
    # "r2-" prefix, so rerun 2 read correct over the sizes it had left.
    _worker_killer(pytester, "[r1-public-1")
    result = grade(SOLUTION, "-p", "worker_killer", "--nodus-reruns=2", "-k", "public", xdist=2)
    died = [(f["size"], f["rerun"]) for f in result.document["flags"] if f["code"] == "no_result"]
    assert died == [("public-1:M33xN1000", 1)], result.document["flags"]
    assert result.document["reruns"]["statuses"] == ["correct", "error"]

