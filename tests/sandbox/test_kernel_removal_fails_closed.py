"""A sandbox that cannot remove its kernels refuses to serve."""

from __future__ import annotations

import pytest


def test_a_sandbox_that_cannot_remove_its_kernels_refuses_to_serve(tmp_path):
    """Fail closed: if the fatbins the grader found cannot be overwritten (here, their
    library is not even loaded), the submission is never imported and the start fails."""
    from pytest_nodus.grader.sandbox_process import Sandbox, SandboxFailure

    kernel = tmp_path / "kernel.py"
    kernel.write_text("print('imported')\ndef kernel(x):\n    return x\n")
    absent = {"library": "/nonexistent/libnodus_absent.so", "section": [0, 64], "spans": [[0, 16]], "kernels": 1}
    sandbox = Sandbox(kernel, "submission", "cpu", removed_kernels=absent)
    try:
        with pytest.raises(SandboxFailure) as failure:
            sandbox.start(1 << 20)
        log = (sandbox.scratch / "sandbox.log").read_text()
    finally:
        sandbox.close()
    assert failure.value.code == "load_failed"
    assert "kernels could not be removed" in failure.value.detail and "is not loaded here" in failure.value.detail
    assert "imported" not in log


def test_without_removal_the_same_sandbox_serves(tmp_path):
    from pytest_nodus.grader.sandbox_process import Sandbox

    kernel = tmp_path / "kernel.py"
    kernel.write_text("def kernel(x):\n    return x\n")
    sandbox = Sandbox(kernel, "submission", "cpu")
    try:
        sandbox.start(1 << 20)
        assert sandbox.alive
    finally:
        sandbox.close()

