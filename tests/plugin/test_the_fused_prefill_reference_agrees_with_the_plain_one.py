"""chunked_prefill's fused reference (one kernel: exact tensor-core products, online softmax,
P in three bf16 pieces) gives the plain fp32 reference's answer to fp32 rounding, in Triton's
interpreter with the sandbox's bf16 fix: on the CPU its products are the same exact products,
so any gap is the algorithm's (a tile's mask, the rescaling across key blocks, a lost piece,
a page read through the wrong table entry). In a process of its own: Triton picks the
interpreter as it decorates. P in one bf16 piece is about 1e-3 away."""

from __future__ import annotations

import textwrap

import pytest
from conftest import in_interpreter

pytestmark = pytest.mark.grade

SIZES = [{"B": 1, "Q": 1, "L": 1, "Hq": 1, "Hkv": 1, "D": 16, "P": 16},  # one token, one key
         {"B": 3, "Q": 40, "L": 96, "Hq": 4, "Hkv": 2, "D": 32, "P": 16},
         {"B": 4, "Q": 29, "L": 70, "Hq": 4, "Hkv": 4, "D": 16, "P": 16},  # GQA ratio 1
         {"B": 6, "Q": 34, "L": 63, "Hq": 8, "Hkv": 1, "D": 16, "P": 16},  # ratio 8, many short chunks
         {"B": 2, "Q": 130, "L": 300, "Hq": 4, "Hkv": 2, "D": 64, "P": 64},  # pages of 64, a ragged tile
         {"B": 2, "Q": 33, "L": 200, "Hq": 2, "Hkv": 1, "D": 128, "P": 128}]

SCRIPT = textwrap.dedent("""
    import json, sys, torch
    from env_suites.chunked_prefill import fused_reference, reference
    names = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "cu_seqlens_q", "softmax_scale")
    distances = []
    for i, dims in enumerate(json.loads(sys.argv[1])):
        inputs = reference.make_inputs(dims, torch.Generator().manual_seed(i), torch.device("cpu"))
        args = [inputs[n] for n in names]
        want, got = reference.attention(*args), fused_reference.attention(*args)
        distances.append(float((got - want).norm() / want.norm()))
    print(json.dumps(distances))
""")


def test_the_fused_reference_is_the_plain_one_to_fp32_rounding():
    distances = in_interpreter(SCRIPT, SIZES)
    assert len(distances) == len(SIZES)
    assert max(distances) < 1e-6, dict(zip(map(str, SIZES), distances))
