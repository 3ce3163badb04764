"""A grader killed mid-grade (a pipeline's timeout, the OOM killer) leaves no sandbox behind:
not the submission's, frozen or mid-call, nor the expert's. Left alive they would hold their
memory (on a GPU, memory no ledger counts) for good."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import REPO, descendants, runs

pytestmark = pytest.mark.grade

SLEEPER = '''
import time
import torch

def kernel(x, weight, eps):
    time.sleep(60)  # the grader is killed while it waits for this call
    return (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(x.dtype)
'''



def test_killing_the_grader_kills_its_sandboxes(tmp_path):
    kernel = tmp_path / "sleeper.py"
    kernel.write_text(SLEEPER)
    grader = subprocess.Popen([sys.executable, "-m", "pytest", str(REPO / "env_suites" / "rmsnorm"), "-q", "-p",
                               "no:cacheprovider", f"--nodus-submission={kernel}", "-k", "public-0"],
                              cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not [p for p in descendants(grader.pid) if runs(p, "pytest_nodus.sandbox")]:
            assert time.monotonic() < deadline, "no sandbox started"
            time.sleep(0.1)
        time.sleep(3)  # both sandboxes up, the submission's call under way
        left = descendants(grader.pid)
        assert any(runs(p, "pytest_nodus.sandbox") for p in left)
    finally:
        os.kill(grader.pid, signal.SIGKILL)
        grader.wait()
    deadline = time.monotonic() + 10
    while alive := [p for p in left if Path(f"/proc/{p}").exists() and runs(p, "pytest_nodus.sandbox")]:
        assert time.monotonic() < deadline, f"sandboxes outlived their grader: {alive}"
        time.sleep(0.1)
