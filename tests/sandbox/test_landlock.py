"""Landlock confines a sandbox's reads, writes, network and signals."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import pytest
from conftest import REPO
from pytest_nodus.sandbox import landlock


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock")
def test_landlock_confines_reads_writes_network_and_signals(tmp_path):
    probe = textwrap.dedent(f"""
        import os, socket, sys, site
        from pytest_nodus.sandbox import landlock
        readable = ["/usr", "/lib", "/lib64", "/etc", "/proc", sys.prefix, sys.base_prefix] + site.getsitepackages()
        landlock.restrict(readable, [{str(tmp_path)!r}], ["/dev/null"])
        def attempt(label, action):
            try:
                action(); print(label, "allowed")
            except OSError:
                print(label, "denied")
        attempt("read-sealed", lambda: open({str(REPO / 'sealed_fixtures' / 'rmsnorm.json')!r}).read())
        attempt("read-expert", lambda: open({str(REPO / 'expert' / 'rmsnorm' / 'solution.py')!r}).read())
        attempt("write-outside", lambda: open("/tmp/nodus-escape-probe", "w"))
        attempt("write-scratch", lambda: open(os.path.join({str(tmp_path)!r}, "ok"), "w"))
        attempt("connect", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))
        attempt("signal-parent", lambda: os.kill(os.getppid(), 0))
    """)
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, timeout=120).stdout.split("\n")
    verdicts = dict(line.split() for line in out if line)
    assert verdicts["read-sealed"] == verdicts["read-expert"] == "denied"
    assert verdicts["write-outside"] == "denied" and verdicts["write-scratch"] == "allowed"
    if landlock.abi_version() >= 4:
        assert verdicts["connect"] == "denied"
    if landlock.abi_version() >= 6:
        assert verdicts["signal-parent"] == "denied"

