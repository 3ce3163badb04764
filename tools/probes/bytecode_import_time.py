"""Wall seconds of what a grade's processes import at their start, on a host without bytecode
beside its sources (simulated here by an empty ``PYTHONPYCACHEPREFIX``: Python then
compiles every module, as the GPU machine's image makes it), against the same imports reading
the grader's bytecode cache (grader/bytecode.py), which is filled first if it is not.

Three import sets: a sandbox's spawn (``python -m pytest_nodus.sandbox`` before its first
message), a trusted sandbox's preload on a GPU (torch.compile's modules, grader/standby.py)
and the grading process's own (pytest and the plugin). Each set in a fresh interpreter,
the two ways alternated, RUNS times.

    python tools/probes/bytecode_import_time.py --runs 3
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_nodus.grader import bytecode

SETS = {
    "sandbox spawn": "import torch, triton, numpy; import pytest_nodus.sandbox.__main__",
    "trusted preload": "import torch, triton; import torch._dynamo, torch._inductor.compile_fx",
    "grading process": "import torch, triton, pytest, hypothesis; import pytest_nodus.grader.plugin, "
                       "pytest_nodus.grader.grading",
}

parser = argparse.ArgumentParser()
parser.add_argument("--runs", type=int, default=3)
args = parser.parse_args()

where = bytecode.directory()
if not bytecode.complete(where):
    began = time.perf_counter()
    files = bytecode.fill(where)
    print(f"cache filled: {files} files in {time.perf_counter() - began:.1f} s at {where}")
root = str(Path(__file__).resolve().parents[2])
env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
env.update(PYTHONPATH=root, PYTHONDONTWRITEBYTECODE="1")


def timed(code: str, prefix: str) -> float:
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], env={**env, "PYTHONPYCACHEPREFIX": prefix}, check=True,
                   stdout=subprocess.DEVNULL)
    return time.perf_counter() - began


for name, code in SETS.items():
    seconds = {"no bytecode": [], "grader's cache": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as empty:
            seconds["no bytecode"].append(timed(code, empty))
        seconds["grader's cache"].append(timed(code, str(where)))
    print(f"{name:16s} " + "   ".join(f"{how} {statistics.median(s):.2f} s ({', '.join(f'{x:.2f}' for x in s)})"
                                      for how, s in seconds.items()))
