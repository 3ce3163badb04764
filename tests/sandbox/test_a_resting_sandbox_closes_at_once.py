"""A sandbox closed while it rests (frozen since its last call) ends at once: SIGKILL ends a
frozen process, and nothing of it outlives the close (its launcher, its cgroup)."""

from __future__ import annotations

import time

import pytest

from pytest_nodus.grader.sandbox_process import Sandbox


def test_a_resting_sandbox_ends_when_closed(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text("def kernel(x):\n    return x.clone()\n")
    sandbox = Sandbox(kernel, "submission", "cpu")
    try:
        sandbox.start(1 << 20)
        if sandbox.cgroup is None:
            pytest.skip("no writable cgroup v2 hierarchy here: nothing is frozen")
        sandbox.rest()
        assert sandbox.cgroup.frozen
        launcher, cgroup = sandbox.process, sandbox.cgroup.path
    finally:
        began = time.monotonic()
        sandbox.close()
        closing_s = time.monotonic() - began
    assert launcher.returncode is not None and not cgroup.exists()
    assert closing_s < 2.0, closing_s
