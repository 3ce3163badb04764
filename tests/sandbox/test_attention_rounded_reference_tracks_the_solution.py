"""At sizes of a few visible pairs, where one rounded term is the whole error, the attention
environment's rounded reference makes the solution's rounding errors: the widened limit
(correctness.ROUNDED_FACTOR times its error) covers every draw, and is not slack."""

from __future__ import annotations

import json
import statistics

import attention_solution_child
import pytest
from pytest_nodus.grader.correctness import ROUNDED_FACTOR

pytestmark = pytest.mark.grade

SIZES = [{"T": 2, "Hq": 1, "Hkv": 1, "D": 16, "B": 1, "W": -1},
         {"T": 3, "Hq": 2, "Hkv": 1, "D": 16, "B": 2, "W": 3},
         {"T": 5, "Hq": 1, "Hkv": 1, "D": 32, "B": 4, "W": -1}]
DRAWS = 40

CHECK = """
rows = []
for dims in json.loads(sys.argv[1]):
    for seed in range(int(sys.argv[2])):
        fresh = inputs.make_inputs(ENV, dims, seed, torch.device("cpu"))
        refs = dict(zip(("dq", "dk", "dv"), ENV.reference(fresh)))
        out = dict(zip(("dq", "dk", "dv"), solution.kernel(*[fresh[s.name] for s in ENV.contract.inputs])))
        rounded = dict(zip(("dq", "dk", "dv"), ENV.rounded_reference(fresh)))
        for name, tol in ENV.tolerance.items():
            rows.append([name, tol.error(out[name], refs[name], refs), tol.error(rounded[name], refs[name], refs)])
print(json.dumps(rows))
"""


def test_the_rounded_reference_makes_the_solutions_errors_at_a_few_pairs():
    rows = attention_solution_child.run(CHECK, json.dumps(SIZES), str(DRAWS))
    assert len(rows) == 3 * DRAWS * len(SIZES)
    uncovered = [r for r in rows if not r[1] <= ROUNDED_FACTOR * r[2]]
    assert not uncovered, uncovered
    ratios = [solution / rounded for _, solution, rounded in rows if rounded > 0]
    assert 0.9 <= statistics.median(ratios) <= 1.1, statistics.median(ratios)
