"""A Ray worker killed mid-grade: its attempt is graded again on a fresh worker, or, with no
retry left, gets a row at the floor (``no_result``); it is never missing, and the other
attempts' rows are untouched."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from conftest import REPO, descendants, runs

pytestmark = pytest.mark.grade

PREFORK = "pytest_nodus.grader.prefork"  # the warm grading process and its forks
SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"
STARTING = REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"



def _grade_killing_first_worker(tmp_path, retries: int, warm: bool = False) -> list[dict]:
    from pytest_nodus.fanout.ray_grades import grade_attempts

    progress = tmp_path / "progress"
    progress.mkdir()
    rows: list = []
    driver = threading.Thread(target=lambda: rows.extend(grade_attempts(
        "rmsnorm", [SOLUTION, STARTING], sealed=REPO / "sealed_fixtures", device="cpu", pytest_args=["-k", "public"],
        retries=retries, progress_dir=progress, warm=warm)))
    driver.start()
    deadline = time.monotonic() + 120
    while not (progress / "0.pid").exists():
        assert time.monotonic() < deadline, "the first attempt's task never started"
        time.sleep(0.05)
    worker = int((progress / "0.pid").read_text())
    # Its grade's pytest under way (slower on a loaded machine); warm: the warm process, the
    # grade forked from it and the next grade's child, forked as this one started.
    while not (grade := descendants(worker)) or (warm and sum(runs(p, PREFORK) for p in grade) < 3):
        assert time.monotonic() < deadline, "the task started no grade"
        time.sleep(0.05)
    time.sleep(1)
    os.kill(worker, signal.SIGKILL)
    driver.join(timeout=300)
    assert not driver.is_alive()
    # The lost worker's grade (its pytest, its sandboxes) died with it: nothing grades on.
    assert not [p for p in grade if Path(f"/proc/{p}").exists()]
    return rows


@pytest.mark.parametrize("warm", [False, True], ids=["fresh", "warm"])
def test_a_lost_worker_is_retried(ray_cluster, tmp_path, warm):
    # warm: the worker's warm grading process, its grade and their sandboxes die with it.
    rows = _grade_killing_first_worker(tmp_path, retries=1, warm=warm)
    assert [(r["status"], r["tries"]) for r in rows] == [("correct", 2), ("correct", 1)]


def test_with_no_retry_left_the_attempt_is_at_the_floor(ray_cluster, tmp_path):
    rows = _grade_killing_first_worker(tmp_path, retries=0)
    assert rows[0]["status"] == "error" and rows[0]["reward"] == -24.0 and rows[0]["tries"] == 1
    assert rows[0]["flags"][0]["code"] == "no_result" and "worker lost" in rows[0]["flags"][0]["detail"]
    assert rows[1]["status"] == "correct"
