"""Every path of the attention solution (dQ from stored dS tiles in one or several chunks of KV
heads; dQ by its own kernel, its row blocks in either order; the streamed tiles by TMA or by
pointers) is within tolerance in the interpreter."""

from __future__ import annotations

import json

import attention_solution_child
import pytest

pytestmark = pytest.mark.grade


SIZES = [
    {"T": 96, "Hq": 4, "Hkv": 2, "D": 32, "B": 3, "W": 24},
    {"T": 64, "Hq": 2, "Hkv": 1, "D": 64, "B": 2, "W": -1},
    {"T": 80, "Hq": 4, "Hkv": 1, "D": 16, "B": 40, "W": 3},  # many one- and two-token documents
    {"T": 70, "Hq": 2, "Hkv": 2, "D": 32, "B": 1, "W": 1},
    {"T": 48, "Hq": 2, "Hkv": 1, "D": 256, "B": 2, "W": 16},  # the "large" head-dim class
    # A window of 2 + 64k keys: a block of queries then reaches into exactly as many key
    # blocks as the stored path's slots allow (_ds_plan's bound is tight; one fewer fails).
    {"T": 200, "Hq": 2, "Hkv": 1, "D": 16, "B": 1, "W": 66},
]


# Each path as the module attributes it sets. The stored path takes one chunk of KV heads or one
# per head (DS_MIN_CHUNKS); a buffer too small for one KV head's tiles falls back to _dq.
STORED = {"DS_STORED": True, "DS_STORED_MIN_D": 0}  # at every head dim of SIZES
STORED_OFF = {"DS_STORED": False}
PATHS = (
    {**STORED, "DS_MIN_CHUNKS": 1},
    {**STORED, "DS_MIN_CHUNKS": 32, "DQ_LAST_ROWS_FIRST": False, "DS_BY_TMA": False},
    {**STORED, "DS_BUFFER_BYTES": 1024},
    {**STORED_OFF, "LOADS_BY_TMA": True, "DQ_LAST_ROWS_FIRST": True},
    {**STORED_OFF, "LOADS_BY_TMA": True, "DQ_LAST_ROWS_FIRST": False},
    {**STORED_OFF, "LOADS_BY_TMA": False, "DQ_LAST_ROWS_FIRST": False},
)
CHECK = f"PATHS = {PATHS!r}\n" + """
from pytest_nodus.grader.correctness import check_outputs
rows = []
defaults = {name: getattr(solution, name) for path in PATHS for name in path}
for path in PATHS:
    for name, value in {**defaults, **path}.items():
        setattr(solution, name, value)
    for dims in json.loads(sys.argv[1]):
        fresh = inputs.make_inputs(ENV, dims, 7, torch.device("cpu"))
        out = solution.kernel(*[fresh[s.name] for s in ENV.contract.inputs])
        checks = check_outputs(list(out), ENV.reference(fresh), ENV.contract, ENV.tolerance)
        rows.append({"path": path, "dims": dims, "checks": [[c.name, c.error, c.limit] for c in checks]})
print(json.dumps(rows))
"""


def test_every_path_of_the_attention_solution_is_within_tolerance():
    rows = attention_solution_child.run(CHECK, json.dumps(SIZES))
    assert len(rows) == len(PATHS) * len(SIZES)
    failed = [(r["path"], r["dims"], name, error, limit)
              for r in rows for name, error, limit in r["checks"] if not error <= limit]
    assert not failed, failed
    assert {name for r in rows for name, _, _ in r["checks"]} == {"dq", "dk", "dv"}

