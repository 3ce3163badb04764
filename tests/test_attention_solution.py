"""The attention solution's two dQ paths, in the Triton interpreter, against the fp32 reference.

The grade (tests/test_grading.py) runs the path the solution ships (dQ by its own kernel).
The other path (dQ accumulated with atomics inside the dK/dV kernel, ``FUSED_DQ``) is kept
for ``tools/probes/attention_tiles.py`` to measure on a GPU; a probe that times a wrong
kernel measures nothing, so both must pass the environment's tolerance here, at both
head-dim classes (D <= 128 and D = 256) and at the mask's edge cases (a window of 1, one
document, documents of one token).
"""

import json
import os
import subprocess
import sys

from conftest import REPO

SIZES = [
    {"T": 96, "Hq": 4, "Hkv": 2, "D": 32, "B": 3, "W": 24},
    {"T": 64, "Hq": 2, "Hkv": 1, "D": 64, "B": 2, "W": -1},
    {"T": 80, "Hq": 4, "Hkv": 1, "D": 16, "B": 40, "W": 3},  # many one- and two-token documents
    {"T": 70, "Hq": 2, "Hkv": 2, "D": 32, "B": 1, "W": 1},
    {"T": 48, "Hq": 2, "Hkv": 1, "D": 256, "B": 2, "W": 16},  # the "large" head-dim class
]

# Run in a child: the interpreter must be chosen before triton is first imported.
CHECK = """
import importlib.util, json, sys
import torch
from pytest_nodus import triton_interpreter
triton_interpreter.install()
from env_suites.attention_backward.environment import ENVIRONMENT as ENV
from pytest_nodus import inputs
from pytest_nodus.correctness import check_outputs
spec = importlib.util.spec_from_file_location("solution", "expert/attention_backward/solution.py")
solution = importlib.util.module_from_spec(spec)
spec.loader.exec_module(solution)
rows = []
for fused in (False, True):
    solution.FUSED_DQ = {"small": fused, "large": fused}
    for dims in json.loads(sys.argv[1]):
        fresh = inputs.make_inputs(ENV, dims, 7, torch.device("cpu"))
        out = solution.kernel(*[fresh[s.name] for s in ENV.contract.inputs])
        checks = check_outputs(list(out), ENV.reference(fresh), ENV.contract, ENV.tolerance)
        rows.append({"fused": fused, "dims": dims, "checks": [[c.name, c.error, c.limit] for c in checks]})
print(json.dumps(rows))
"""


def test_both_dq_paths_of_the_attention_solution_are_within_tolerance():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", CHECK, json.dumps(SIZES)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(rows) == 2 * len(SIZES)
    failed = [(r["fused"], r["dims"], name, error, limit)
              for r in rows for name, error, limit in r["checks"] if not error <= limit]
    assert not failed, failed
    assert {name for r in rows for name, _, _ in r["checks"]} == {"dq", "dk", "dv"}
