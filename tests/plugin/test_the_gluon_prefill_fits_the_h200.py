"""The Gluon prefill prototype (expert/chunked_prefill/solution_gluon.py) compiles for sm_90a at
every public size, with its producer and consumers specialised (setmaxnreg), wgmma and TMA in
its loops, nothing spilled and its shared memory within a block's 227 KiB: what can be known
of it without the GPU it needs to run."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

SIZES = ("public-0", "public-1", "public-2", "public-3", "public-4")


@pytest.mark.parametrize("size", SIZES)
def test_the_gluon_prefill_fits_the_h200(size):
    done = subprocess.run([sys.executable, "-m", "pytest_nodus.commands.sm90", "chunked_prefill",
                           str(REPO / "expert" / "chunked_prefill" / "solution_gluon.py"), "--size", size],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(row for row in done.stdout.splitlines() if "_prefill" in row and "regs" in row)
    assert re.search(r"spill +0 B", line), line
    assert not re.search(r"wgmma +0 ", line) and not re.search(r"tma +0 ", line), line
    assert "setmaxnreg" in line, line
