"""Run a script against the attention solution in the Triton interpreter, in a child process:
the interpreter must be chosen before triton is first imported. The script's prelude loads
the environment (``ENV``), ``inputs``, ``torch`` and the solution module (``solution``); the
script prints one JSON line last, which ``run`` returns parsed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO

PRELUDE = """
import importlib.util, json, sys
import torch
from pytest_nodus.sandbox import triton_interpreter
triton_interpreter.install()
from env_suites.attention_backward.environment import ENVIRONMENT as ENV
from pytest_nodus.grader import inputs
spec = importlib.util.spec_from_file_location("solution", "expert/attention_backward/solution.py")
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)
"""


def run(script: str, *args: str):
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", PRELUDE + script, *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
