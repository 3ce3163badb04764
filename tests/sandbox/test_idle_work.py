"""Between calls, a thread that is only alive costs nothing; a thread that works is counted."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from pytest_nodus.grader.cgroup import SandboxCgroup
from pytest_nodus.grader.idle_work import ALLOWED_MS, IdleWatch

# The main thread stands for the harness (left out of the count); a second thread is either
# parked on an event (a pool's idle worker) or busy.
_PROCESS = """
import sys, threading, time
def busy():
    while True: pass
parked = threading.Event()
threading.Thread(target=busy if sys.argv[1] == "busy" else parked.wait, daemon=True).start()
t = time.process_time()
while time.process_time() - t < 0.2:  # the main thread works too: it must not count
    pass
print("resting", flush=True)
time.sleep(60)
"""


def _cpu_s(pid: int) -> float:
    """The process's user and system CPU time, all threads, from /proc."""
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.parametrize("with_cgroup", [False, True])
@pytest.mark.parametrize("worker", ["parked", "busy"])
def test_only_work_counts(worker, with_cgroup):
    cgroup = SandboxCgroup.create("test") if with_cgroup else None
    if with_cgroup and cgroup is None:
        pytest.skip("no writable cgroup v2 hierarchy here")
    command = [*(cgroup.enter() if cgroup else []), sys.executable, "-c", _PROCESS, worker]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        # From here only the second thread may run: the main thread's own work is over (on a
        # loaded machine it can outlast any fixed wait, and its CPU is in /proc's count below).
        assert process.stdout.readline().strip() == "resting"
        sandbox = SimpleNamespace(pid=process.pid, process=process, cgroup=cgroup)
        watch = IdleWatch()
        start = _cpu_s(process.pid)
        watch.returned(sandbox)
        # The window lasts until the kernel's own count shows 150 ms more of the process's CPU
        # (its second thread's: the main thread sleeps), 30 s at most: on a loaded 2-core machine
        # a busy thread may hold a core for less than a tenth of a second's window. A parked
        # thread's process never gets there.
        deadline = time.monotonic() + (30.0 if worker == "busy" else 1.0)
        while time.monotonic() < deadline and _cpu_s(process.pid) - start < 0.15:
            time.sleep(0.05)
        spent, busiest = watch.worked(sandbox)
        proc_ms = 1e3 * (_cpu_s(process.pid) - start)
        if worker == "busy":
            assert spent > 100 and busiest, f"counted {spent:.1f} ms; /proc: {proc_ms:.0f} ms"
        else:
            assert spent < ALLOWED_MS, f"counted {spent:.1f} ms; /proc: {proc_ms:.0f} ms"
        assert watch.worked(sandbox) is None  # it starts over at the next return
    finally:
        process.kill()
        process.wait()
        if cgroup is not None:
            cgroup.remove()
