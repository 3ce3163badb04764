"""Reaping a process that does not end is bounded."""

from __future__ import annotations

import subprocess


def test_reaping_a_process_that_does_not_end_is_bounded():
    """The grader never waits for good on a process that will not end (one stuck in the GPU
    driver's teardown would otherwise stall it, holding the GPU lock)."""
    import signal
    import time

    from pytest_nodus.grader.processes import reap

    child = subprocess.Popen(["sleep", "30"])
    started = time.monotonic()
    assert reap(child.pid, timeout_s=0.3) is False  # still running: given up on, not waited for
    assert time.monotonic() - started < 5
    child.send_signal(signal.SIGKILL)
    assert reap(child.pid, timeout_s=10) is True
    child.returncode = -9  # reaped here, not by Popen

