"""The prefill solution's Gluon kernel (expert/chunked_prefill/solution.py, the H200's path at
D >= 128) compiles for sm_90a at every such public size and at a hidden one whose pages are
longer than its tiles: producer and consumers specialised (setmaxnreg), wgmma and TMA in its
loops, no wgmma serialised by ptxas (which would undo the overlap), its
shared memory within a block's 227 KiB; one product at a time, nothing spilled. With the
overlap (shipped) Triton 3.9 spills a few bytes at D = 128 where the H200's 3.6 spills none,
so spills are not asserted there. What can be known of it without the GPU it needs."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

SIZES = ("public-0", "public-1", "public-3", "public-4", "hidden-2")  # D >= 128; hidden-2: 128-key pages, 64-key tiles


# The kernel as shipped (overlap on) and without the overlap.
SETTINGS = {"shipped": (), "one_product_at_a_time": ("OVERLAP=False",)}


@pytest.mark.parametrize("setting", sorted(SETTINGS))
@pytest.mark.parametrize("size", SIZES)
def test_the_gluon_prefill_fits_the_h200(size, setting):
    sets = [arg for value in SETTINGS[setting] for arg in ("--set", value)]
    done = subprocess.run([sys.executable, "-m", "pytest_nodus.commands.sm90", "chunked_prefill",
                           str(REPO / "expert" / "chunked_prefill" / "solution.py"), "--size", size,
                           "--sealed", str(REPO / "sealed_fixtures"), *sets],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    line = next(row for row in done.stdout.splitlines() if "_prefill_gluon" in row and "regs" in row)
    assert setting == "one_product_at_a_time" or "'OVERLAP': True" in line, line
    assert setting != "one_product_at_a_time" or re.search(r"spill +0 B", line), line
    assert not re.search(r"wgmma +0 ", line) and not re.search(r"tma +0 ", line), line
    assert "setmaxnreg" in line, line
    assert "SERIALISED" not in line, line
