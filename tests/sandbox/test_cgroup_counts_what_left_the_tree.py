"""A sandbox's cgroup counts the CPU time of everything it started, wherever it went."""

from __future__ import annotations

import subprocess
import sys
import time

# A parent that double-forks a grandchild (re-parented away from it at once), which burns
# 0.3 s of CPU and exits; the parent waits for nothing and sleeps.
_DETACHED_BURN = """
import os, time
if os.fork() == 0:
    if os.fork() == 0:
        t = time.process_time()
        while time.process_time() - t < 0.3:
            pass
    os._exit(0)
time.sleep(1.0)
"""



def test_a_detached_grandchild_is_counted(cgroup):
    before = cgroup.usage_ns()
    subprocess.run([*cgroup.enter(), sys.executable, "-c", _DETACHED_BURN], check=True, timeout=60)
    # The grandchild outlives its parent when the host is loaded (its 0.3 s of CPU can take
    # longer than the parent's 1 s of sleep): wait until it has exited, not a fixed moment.
    deadline = time.monotonic() + 30
    while cgroup.tasks() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert cgroup.usage_ns() - before >= 0.3e9
