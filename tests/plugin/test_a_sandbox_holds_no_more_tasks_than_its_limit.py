"""A submission's sandbox cannot start more tasks (processes and threads) than the task card
allows: the kernel refuses the fork past the limit (grader/cgroup_limits.py), so a kernel
that forks without end hurts only its own grade. The grade says the limit held.

Two walls, one per kind of host: a pids cgroup of the sandbox's own, and, where no pids
controller can be had (the H200's cgroup v2 grants memory only), RLIMIT_NPROC on the
sandbox's own uid. The second is shown here by grading with a plugin that hides the pids
cgroups from the grader. Where a wall cannot be raised on this machine its case is skipped."""

from __future__ import annotations

import pytest
from conftest import REPO

from pytest_nodus.grader import cgroup_limits, walls

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
# Loaded into the grading pytest with -p: the grader then finds no pids cgroup, v1 or v2.
HIDE_PIDS_CGROUPS = """
from pytest_nodus.grader import cgroup_limits

_homes = cgroup_limits._homes()
cgroup_limits._homes = lambda: {k: v for k, v in _homes.items() if k != "pids"}
_v2 = cgroup_limits._v2_controllers()
cgroup_limits._v2_controllers = lambda: _v2 - {"pids"}
"""


@pytest.fixture(params=["pids_cgroup", "own_uid_rlimit"])
def wall(request, pytester):
    """The extra pytest arguments that make the grader raise this wall."""
    if request.param == "pids_cgroup":
        if "pids" not in cgroup_limits._homes() and "pids" not in cgroup_limits._v2_controllers():
            pytest.skip("no writable pids cgroup (v1 or v2) here")
        return ()
    if walls.sandbox_uid(REPO) is None or not walls.prefix(0)[0]:
        pytest.skip("the sandbox cannot run as a uid of its own here")
    pytester.makepyfile(hide_pids_cgroups=HIDE_PIDS_CGROUPS)
    return ("-p", "hide_pids_cgroups")


def test_threads_past_the_limit_are_refused(grade, tmp_path, wall):
    kernel = tmp_path / "many_threads.py"
    kernel.write_text(THREADS.format(count=2 * LIMIT))
    document = grade(kernel, *wall, suite=SUITE).document
    assert document["status"] == "error" and document["reward"] == -24, document["flags"]
    assert "can't start new thread" in " ".join(f["detail"] for f in document["flags"]), document["flags"]


def test_a_kernel_within_the_limit_is_correct_and_the_grade_says_the_limit_held(grade, tmp_path, wall):
    kernel = tmp_path / "few_threads.py"
    kernel.write_text(THREADS.format(count=4))
    document = grade(kernel, *wall, suite=SUITE).document
    assert document["status"] == "correct", document["flags"]
    assert cgroup_limits.TASKS_LIMIT in document["isolation"]
