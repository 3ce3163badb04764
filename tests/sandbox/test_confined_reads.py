"""A confined sandbox reads its trees, its own scratch and its device files, and nothing of /dev/shm's other sandboxes; the escape tripwire agrees with Landlock on which is which."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
from conftest import REPO
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_own_scratch_and_device_files_are_read_and_no_other_scratch(tmp_path):
    probe = textwrap.dedent("""
        import os, sys, tempfile, torch
        other = tempfile.mkdtemp(prefix="nodus-other-", dir="/dev/shm")
        open(os.path.join(other, "kernel_under_test.py"), "w").write("x = 1")
        own = tempfile.mkdtemp(prefix="nodus-own-", dir="/dev/shm")
        open(os.path.join(own, "mine.py"), "w").write("x = 1")
        from pytest_nodus.sandbox import guard
        from pytest_nodus.sandbox.confine import confine
        isolation, readable, filtered = confine(own, torch.device("cpu"))
        tripwire = guard.EscapeTripwire(readable)
        def attempt(label, path):
            try:
                open(path).read(); print(label, "allowed", len(tripwire.drain()))
            except OSError:
                print(label, "denied", len(tripwire.drain()))
        attempt("devnull", "/dev/null")
        attempt("own", os.path.join(own, "mine.py"))
        attempt("other", os.path.join(other, "kernel_under_test.py"))
    """)
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120)
    subprocess.run("rm -rf /dev/shm/nodus-other-* /dev/shm/nodus-own-*", shell=True, check=False)
    verdicts = {line.split()[0]: tuple(line.split()[1:]) for line in run.stdout.splitlines() if line}
    assert verdicts == {"devnull": ("allowed", "0"), "own": ("allowed", "0"), "other": ("denied", "1")}, run.stderr[-2000:]
