"""Time spent waiting for a GPU that other grades hold is a phase of its own.

Grades sharing a GPU queue on its lock for their timed rounds; without its own figure that
wait landed in no phase and the grade's breakdown left most of its wall time unexplained.
"""

from __future__ import annotations

import threading
import time

from pytest_nodus.grader import devices, phases


def test_the_lock_says_how_long_it_was_waited_for(tmp_path):
    path = tmp_path / "pytest-nodus-gpu-test.lock"
    taken = threading.Event()

    def hold_a_while():
        with devices.hold(path, wait_s=1):
            taken.set()
            time.sleep(0.3)

    other = threading.Thread(target=hold_a_while)
    other.start()
    taken.wait(1)
    with devices.hold(path, wait_s=5) as waited_ms:
        assert waited_ms >= 200
    other.join()
    with devices.hold(path, wait_s=1) as waited_ms:  # free: taken at once
        assert waited_ms < 100


def test_the_terminal_line_shows_the_wait_only_where_there_was_one():
    assert "gpu wait 2.5" in phases.line({"wall": 10_000.0, "gpu_wait": 2_500.0})
    assert "gpu wait" not in phases.line({"wall": 10_000.0})
