"""The CPU count read at a window's close holds the slice of a thread still on its core."""

from __future__ import annotations

import subprocess
import sys
import time

from pytest_nodus.grader.processes import task_runtimes

# Spins on one core, never sleeping: the scheduler adds its time at ticks only.
_SPIN = "while True: pass"



def test_exact_read_freezes_a_running_thread_and_holds_all_it_ran(cgroup, monkeypatch):
    spinner = subprocess.Popen([*cgroup.enter(), sys.executable, "-c", _SPIN])
    seen_frozen = []
    freeze = cgroup.freeze

    def freeze_and_look(*args, **kwargs):
        done = freeze(*args, **kwargs)
        # Off its core now: its runtime is all added up.
        seen_frozen.append(sum(ns for _, ns in task_runtimes(cgroup.tasks()).values()))
        return done

    monkeypatch.setattr(cgroup, "freeze", freeze_and_look)
    try:
        time.sleep(0.2)
        # A starting point taken frozen (the task's runtime also holds the moments before it
        # entered the cgroup, so only differences compare).
        freeze()
        runtime_at_start = sum(ns for _, ns in task_runtimes(cgroup.tasks()).values())
        usage_at_start = cgroup.usage_ns()
        cgroup.thaw()
        time.sleep(0.5)
        exact = cgroup.exact_usage_ns()
        assert seen_frozen, "a task that never leaves its core must be frozen for the read"
        ran = seen_frozen[0] - runtime_at_start
        assert exact - usage_at_start >= ran - 2_000  # usage_usec rounds down, twice
        assert not cgroup.frozen
        later = cgroup.usage_ns()
        time.sleep(0.2)
        assert cgroup.usage_ns() > later  # thawed: it still runs
    finally:
        spinner.kill()
        spinner.wait()


def test_a_frozen_cgroup_runs_nothing(cgroup):
    spinner = subprocess.Popen([*cgroup.enter(), sys.executable, "-c", _SPIN])
    try:
        time.sleep(0.3)
        assert cgroup.freeze()
        frozen_at = cgroup.usage_ns()
        time.sleep(0.3)
        assert cgroup.usage_ns() - frozen_at < 1_000_000
        cgroup.thaw()
    finally:
        spinner.kill()
        spinner.wait()
