"""A warm grader's grade past the caller's timeout is killed with its sandboxes, and the
warm process grades the next attempt: a hung grade holds no GPU and stops no pipeline."""

from __future__ import annotations

import subprocess
import threading
import time

import pytest
from conftest import REPO, descendants, runs

from pytest_nodus import WarmGrader

pytestmark = pytest.mark.grade

SANDBOX = "pytest_nodus.sandbox"

HANGS = '''
import time

def kernel(x, weight, eps):
    time.sleep(10 ** 6)
'''



def test_the_hung_grade_and_its_sandboxes_end_and_the_next_grade_runs(tmp_path):
    hangs = tmp_path / "hangs.py"
    hangs.write_text(HANGS)
    with WarmGrader(device="cpu") as warm:
        raised = []

        def hung_grade():
            try:
                warm.grade("rmsnorm", hangs, pytest_args=["-k", "public-0", "--nodus-call-timeout=600"], timeout_s=15)
            except subprocess.TimeoutExpired as exc:
                raised.append(exc)

        caller = threading.Thread(target=hung_grade)
        caller.start()
        time.sleep(10)  # the hung call under way, the next grade's sandboxes spawned ahead
        sandboxes = {p for p in descendants(warm._process.pid) if runs(p, SANDBOX)}
        caller.join(60)
        assert raised, "no TimeoutExpired"
        deadline = time.monotonic() + 10
        # The hung grade's sandboxes end; those left are the next grade's, still the warm process's.
        while orphans := {p for p in sandboxes if runs(p, SANDBOX)} - descendants(warm._process.pid):
            assert time.monotonic() < deadline, f"sandboxes outlived their grade: {orphans}"
            time.sleep(0.1)
        assert {p for p in sandboxes if runs(p, SANDBOX)} < sandboxes, "no sandbox of the hung grade ended"
        solution = REPO / "expert" / "rmsnorm" / "solution.py"
        assert warm.grade("rmsnorm", solution, pytest_args=["-k", "public-0"]).correct
