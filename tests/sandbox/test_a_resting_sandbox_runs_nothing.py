"""After its call the submission's sandbox is given a moment to fall idle (ended early by a
busy thread that has run its allowance), then frozen: until its next request none of its
threads runs, and the next request wakes it."""

from __future__ import annotations

import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from pytest_nodus.grader.cgroup import SandboxCgroup
from pytest_nodus.grader.idle_work import ALLOWED_MS, SETTLE_S, IdleWatch
from pytest_nodus.grader.sandbox_process import Sandbox

_BUSY = """
import threading, time
def busy():
    while True: pass
threading.Thread(target=busy, daemon=True).start()
time.sleep(60)
"""


@pytest.fixture
def busy_sandbox():
    cgroup = SandboxCgroup.create("test")
    if cgroup is None:
        pytest.skip("no writable cgroup v2 hierarchy here")
    process = subprocess.Popen([*cgroup.enter(), sys.executable, "-c", _BUSY])
    time.sleep(0.3)  # its busy thread started
    yield SimpleNamespace(pid=process.pid, process=process, cgroup=cgroup)
    process.kill()
    process.wait()
    cgroup.remove()


def test_a_busy_thread_ends_the_settle_once_it_has_run_its_allowance(busy_sandbox):
    watch = IdleWatch()
    watch.returned(busy_sandbox)
    started = time.monotonic()
    watch.settle(busy_sandbox)
    assert time.monotonic() - started < SETTLE_S  # it did not wait for the thread to stop
    spent, busiest = watch.worked(busy_sandbox)  # the busiest list is detail: a thread's own figure can lag the cgroup's
    assert spent > ALLOWED_MS, (spent, busiest)


def test_a_resting_sandbox_runs_nothing_until_its_next_request(busy_sandbox):
    Sandbox.rest(busy_sandbox)
    before = busy_sandbox.cgroup.usage_ns()
    time.sleep(0.2)
    assert busy_sandbox.cgroup.usage_ns() == before
    with pytest.raises(Exception):  # the stand-in has no pipes: the request itself fails, after waking it
        Sandbox.send(busy_sandbox, {"op": "call"})
    assert busy_sandbox.cgroup.frozen is False
    # Awake, its busy thread runs again: 100 ms of CPU, within however long two loaded cores take.
    deadline = time.monotonic() + 10
    while busy_sandbox.cgroup.usage_ns() <= before + 100e6 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert busy_sandbox.cgroup.usage_ns() > before + 100e6
