"""The GPU's sum of squares (grader/norms.py: one kernel, an fp64 partial per block) reads what
whole-fp64 arithmetic reads, for every dtype the checks see, at lengths off the block size,
at magnitudes whose squares leave fp32's range, and over millions of elements. Run here in
Triton's interpreter, the same kernel on the CPU."""

from __future__ import annotations

from conftest import in_interpreter

SCRIPT = r"""
import json, sys, torch
from pytest_nodus.grader import norms
cases = []
g = torch.Generator().manual_seed(0)
for dtype, n, scale in json.loads(sys.argv[1]):
    x = (scale * torch.randn(n, generator=g, dtype=torch.float64)).to(getattr(torch, dtype))
    exact = float(x.double().pow(2).sum())
    cases.append([dtype, n, scale, float(norms.squares_by_blocks(x)), exact])
print(json.dumps(cases))
"""

CASES = [["bfloat16", 1, 1.0], ["bfloat16", 4095, 1.0], ["float32", 4097, 1e-20], ["float32", 12289, 1e21],
         ["float64", 8191, 3.0], ["float32", 3_000_001, 1.0]]


def test_the_blocks_sum_what_fp64_sums():
    for dtype, n, scale, got, exact in in_interpreter(SCRIPT, CASES):
        assert abs(got - exact) <= 1e-12 * exact, (dtype, n, scale, got, exact)
