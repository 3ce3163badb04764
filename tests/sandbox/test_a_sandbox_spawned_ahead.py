"""A sandbox spawned ahead of its grade (grader/standby.py) waits, inside its walls, for what
to run: launched, it runs the kernel file it is then given, with its start-up stages from the
spawn; never launched, it ends when closed and leaves no process, cgroup or scratch."""

from __future__ import annotations

import os
import time

import pytest

from pytest_nodus.grader.sandbox_process import Sandbox
from pytest_nodus.grader.sandbox_spawn import spawn


def _cpu_ticks(pid: int) -> int:
    """CPU ticks of ``pid`` and every process below it (a launcher may fork the sandbox)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            parents[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    total, todo = 0, [pid]
    while todo:
        here = todo.pop()
        total += parents.get(here, (0, 0))[1]
        todo += [child for child, (parent, _) in parents.items() if parent == here]
    return total


def _wait_for_its_imports(pid: int, at_least_s: float, at_most_s: float = 60.0) -> None:
    """Until the spawned process tree stops using CPU (its imports done, waiting for its
    launch), and ``at_least_s`` have passed: on a loaded machine the imports outlast any
    fixed sleep, and then no standby is left to see."""
    began, last, still = time.monotonic(), -1, 0
    while time.monotonic() - began < at_most_s:
        ticks = _cpu_ticks(pid)
        still = still + 1 if ticks == last else 0
        last = ticks
        if still >= 3 and time.monotonic() - began >= at_least_s:
            return
        time.sleep(0.25)


def test_a_sandbox_spawned_ahead_runs_the_file_it_is_given_later(tmp_path):
    spawned = spawn("submission", None)
    _wait_for_its_imports(spawned.process.pid, 3.0)  # its imports run while the grader does other things
    kernel = tmp_path / "kernel.py"
    kernel.write_text("def kernel(x):\n    return x.clone()\n")
    sandbox = Sandbox(kernel, "submission", "cpu", spawned=spawned)
    try:
        assert sandbox.process is spawned.process
        sandbox.start(1 << 20)
        assert sandbox.alive and "process" in sandbox.isolation
        stages = sandbox.stages_ms
        # Its imports and its wait for the launch, 3 s after the spawn, are stages of its own.
        assert stages["start_process"] > 0 and stages["start_standby"] > 0
        assert stages["start_process"] + stages["start_standby"] >= 3000
    finally:
        sandbox.close()
    assert not spawned.scratch.exists()


def test_a_sandbox_never_launched_leaves_nothing():
    spawned = spawn("submission", None)
    cgroup = spawned.cgroup.path if spawned.cgroup is not None else None
    assert spawned.alive and spawned.scratch.is_dir()
    spawned.close()
    assert spawned.process.returncode is not None
    assert not spawned.scratch.exists()
    if cgroup is None:
        pytest.skip("no writable cgroup v2 hierarchy here")
    assert not cgroup.exists()


def test_a_sandbox_closed_while_importing_ends_at_once():
    spawned = spawn("expert", None)
    began = time.monotonic()
    spawned.close()  # still importing torch: killed, not waited for
    assert time.monotonic() - began < 2.0
    assert spawned.process.returncode is not None and not os.path.exists(spawned.scratch)
