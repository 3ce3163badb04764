"""A submission's sandbox cannot start more tasks (processes and threads) than the task card
allows: the kernel refuses the fork past the limit (grader/cgroup_limits.py), so a kernel
that forks without end hurts only its own grade. The grade says the limit held.

Where the grader cannot make limit cgroups (no writable cgroup v1 pids hierarchy) there is
no such wall to show, and the test is skipped."""

from __future__ import annotations

import pytest
from conftest import REPO

from pytest_nodus.grader import cgroup_limits

pytestmark = pytest.mark.grade

SUITE = REPO / "tests" / "envs" / "rmsnorm_few_tasks" / "suite_rmsnorm_few_tasks.py"
LIMIT = 48  # the environment's max_tasks
THREADS = """
import threading, torch
_started = []

def kernel(x, weight, eps):
    stop = threading.Event()
    try:
        while len(_started) < {count}:
            t = threading.Thread(target=stop.wait)
            t.start()
            _started.append(t)
    finally:
        stop.set()
        for t in _started:
            t.join()
        _started.clear()
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
"""


@pytest.fixture(autouse=True)
def _needs_the_wall():
    if "pids" not in cgroup_limits._homes():
        pytest.skip("no writable cgroup v1 pids hierarchy: the grader raises no tasks-limit here")


def test_threads_past_the_limit_are_refused(grade, tmp_path):
    kernel = tmp_path / "many_threads.py"
    kernel.write_text(THREADS.format(count=2 * LIMIT))
    document = grade(kernel, suite=SUITE).document
    assert document["status"] == "error" and document["reward"] == -24, document["flags"]
    assert "can't start new thread" in " ".join(f["detail"] for f in document["flags"]), document["flags"]


def test_a_kernel_within_the_limit_is_correct_and_the_grade_says_the_limit_held(grade, tmp_path):
    kernel = tmp_path / "few_threads.py"
    kernel.write_text(THREADS.format(count=4))
    document = grade(kernel, suite=SUITE).document
    assert document["status"] == "correct", document["flags"]
    assert cgroup_limits.TASKS_LIMIT in document["isolation"]
