"""A sandbox closed while it rests (frozen since its last call) is woken to read EXIT and ends
by itself; frozen, it would never read it, and the grade would wait out the close's limit."""

from __future__ import annotations

import pytest

from pytest_nodus.grader.sandbox_process import Sandbox


def test_a_resting_sandbox_exits_when_closed(tmp_path):
    kernel = tmp_path / "kernel.py"
    kernel.write_text("def kernel(x):\n    return x.clone()\n")
    sandbox = Sandbox(kernel, "submission", "cpu")
    try:
        sandbox.start(1 << 20)
        if sandbox.cgroup is None:
            pytest.skip("no writable cgroup v2 hierarchy here: nothing is frozen")
        sandbox.rest()
        assert sandbox.cgroup.frozen
        launcher = sandbox.process
    finally:
        sandbox.close()
    assert launcher.returncode == 0  # it read EXIT; a kill at the close's limit leaves -9
