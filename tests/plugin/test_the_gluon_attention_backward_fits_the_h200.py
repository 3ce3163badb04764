"""The attention solution's Gluon dK/dV kernel (expert/attention_backward/solution.py, the
H200's path where dS is stored, D >= 128) compiles for sm_90a at a D = 128 size and at two
D = 256 sizes (one with a length no tile divides): producer and consumers specialised
(setmaxnreg), wgmma and TMA in its loops, no wgmma serialised by ptxas, nothing spilled, its
shared memory within a block's 227 KiB. What can be known of it without the GPU it needs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


@pytest.mark.parametrize("size", ["public-0", "public-1", "hidden-3"])
def test_the_gluon_attention_backward_fits_the_h200(size):
    done = subprocess.run([sys.executable, "-m", "pytest_nodus.commands.sm90", "attention_backward",
                           str(REPO / "expert" / "attention_backward" / "solution.py"), "--size", size,
                           "--sealed", str(REPO / "sealed_fixtures")],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(row for row in done.stdout.splitlines() if "_dkdv_gluon" in row and "regs" in row)
    assert re.search(r"spill +0 B", line), line
    assert not re.search(r"wgmma +0 ", line) and not re.search(r"tma +0 ", line), line
    assert "setmaxnreg" in line, line
    assert "SERIALISED" not in line and "WILL NOT LAUNCH" not in line, line
