"""attention_backward's fused references (the inputs' forward and the gradients, as Triton
kernels with exact tensor-core products and P and dS in three bf16 pieces) give the plain
fp32 references' answers to fp32 rounding, in Triton's interpreter with the sandbox's bf16
fix: any gap is the algorithm's (a document's bound, the window, a row that sees nothing in a
block, the group's sum). In a process of its own: Triton picks the interpreter as it
decorates. Gradients are measured against the largest one's norm, as the grader's
cross-check does (a window of 1 cancels dQ and dK to rounding noise)."""

from __future__ import annotations

import textwrap

import pytest
from conftest import in_interpreter

pytestmark = pytest.mark.grade

SIZES = [{"T": 96, "Hq": 4, "Hkv": 2, "D": 32, "B": 3, "W": 24},
         {"T": 64, "Hq": 2, "Hkv": 1, "D": 64, "B": 2, "W": -1},  # full causal
         {"T": 50, "Hq": 4, "Hkv": 2, "D": 16, "B": 3, "W": 1},  # each row sees itself only
         {"T": 70, "Hq": 4, "Hkv": 1, "D": 32, "B": 2, "W": 5},  # GQA 4, windows cut inside blocks
         {"T": 1, "Hq": 1, "Hkv": 1, "D": 16, "B": 1, "W": -1},  # one token
         {"T": 40, "Hq": 2, "Hkv": 2, "D": 64, "B": 40, "W": -1},  # every document one token
         {"T": 90, "Hq": 8, "Hkv": 2, "D": 16, "B": 1, "W": -1}]  # one document across many blocks

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    from env_suites.attention_backward import environment, fused_reference, reference
    env = environment.ENVIRONMENT
    distances = []
    for i, dims in enumerate(json.loads(sys.argv[1])):
        x = env.make_inputs(dims, torch.Generator().manual_seed(i), torch.device("cpu"))
        q, k, v, cu, w, s = (x[n] for n in ("q", "k", "v", "cu_seqlens", "window", "softmax_scale"))
        row = {}
        for name, want, got in zip(("o", "lse"), reference.forward(q, k, v, cu, w, s), fused_reference.forward(q, k, v, cu, w, s)):
            row[name] = float((got - want).norm() / want.norm())
        want = reference.backward(q, k, v, x["o"], x["do"], cu, w, s)
        got = fused_reference.backward(q, k, v, x["o"], x["do"], cu, w, s)
        largest = max(float(g.norm()) for g in want)
        for name, a, b in zip(("dq", "dk", "dv"), want, got):
            row[name] = float((b - a).norm() / largest)
        distances.append(row)
    print(json.dumps(distances))
""")


def test_the_fused_references_are_the_plain_ones_to_fp32_rounding():
    distances = in_interpreter(SCRIPT, SIZES)
    assert len(distances) == len(SIZES)
    for dims, row in zip(SIZES, distances):
        assert max(row.values()) < 1e-6, (dims, row)
