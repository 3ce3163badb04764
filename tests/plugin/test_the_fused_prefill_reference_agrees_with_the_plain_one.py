"""chunked_prefill's fused reference (one kernel: exact tensor-core products, online softmax,
P in three bf16 pieces) gives the plain fp32 reference's answer to fp32 rounding, at every
CPU size, public and hidden, in Triton's interpreter (a process of its own: the interpreter
is chosen as Triton decorates). P in one bf16 piece would be about 1e-3 away."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


def test_the_fused_reference_is_the_plain_one_to_fp32_rounding():
    run = subprocess.run([sys.executable, str(REPO / "tools" / "probes" / "exact_references.py"), "chunked_prefill",
                          "--cpu", "--fused", "--sealed", str(REPO / "sealed_fixtures"), "--require", "1e-6"],
                         cwd=REPO, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line.split() for line in run.stdout.splitlines() if line.startswith(("public-", "hidden-"))]
    assert [r[0] for r in rows] == ["public-0", "public-1", "hidden-0", "hidden-1"]
    assert all(float(r[1]) < 1e-6 for r in rows), run.stdout
