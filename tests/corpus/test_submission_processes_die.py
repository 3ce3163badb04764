"""Processes a submission starts die with its sandbox."""

from __future__ import annotations

import os
import pytest
from conftest import CHEATS

pytestmark = pytest.mark.corpus


def _leaked_sandbox_processes() -> set[int]:
    """Processes running the sandbox's command line whose scratch directory is gone: their
    sandbox was closed (it kills its process group before it removes the directory), so they
    leaked. Other tests' live sandboxes (under xdist) still have theirs."""
    found = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                argv = cmdline.read().split(b"\0")
        except (OSError, ValueError):
            continue
        if b"pytest_nodus.sandbox" in argv and b"--scratch" in argv:
            scratch = argv[argv.index(b"--scratch") + 1].decode()
            if not os.path.isdir(scratch):
                found.add(int(entry))
    return found


def test_processes_a_submission_starts_die_with_its_sandbox(grade):
    """forked_worker leaves a worker process blocked on a pipe it holds both ends of: the
    grader kills the sandbox's whole process group when it closes the sandbox."""
    before = _leaked_sandbox_processes()
    result = grade(CHEATS / "rmsnorm" / "forked_worker.py", "-k", "public-0")
    assert result.document is not None, result.text
    assert "background_process" in result.codes
    leftover = _leaked_sandbox_processes() - before
    assert not leftover, f"processes started by the submission outlived the grade: {sorted(leftover)}"

