"""A sandbox spawned ahead of its grade (grader/standby.py) waits, inside its walls, for what
to run: launched, it runs the kernel file it is then given, with its start-up stages from the
spawn; never launched, it ends when closed and leaves no process, cgroup or scratch."""

from __future__ import annotations

import os
import time

import pytest

from pytest_nodus.grader.sandbox_process import Sandbox
from pytest_nodus.grader.sandbox_spawn import spawn


def test_a_sandbox_spawned_ahead_runs_the_file_it_is_given_later(tmp_path):
    spawned = spawn("submission", None)
    time.sleep(3.0)  # its imports run while the grader does other things
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
