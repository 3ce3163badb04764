"""chunked_prefill: new query chunks attending causally over a growing paged KV cache, GQA.

``kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q,
softmax_scale) -> o``; see TASK.md for the contract. Inputs and the fp32 reference are
``reference.py``.
"""

from __future__ import annotations

from pathlib import Path

from env_suites.chunked_prefill import fused_reference, reference
from pytest_nodus.grader.exact_products import cross_checked
from pytest_nodus import (ATTENTION_LIBRARIES, Choice, Contract, Cost, Environment, IntRange, Normwise, Profile,
                          ScalarSpec, SizeDomain, TensorSpec)

EXPERT = Path(__file__).resolve().parents[2] / "expert" / "chunked_prefill"


_ARGUMENTS = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "cu_seqlens_q", "softmax_scale")


# On a GPU the reference is one kernel with its products on tensor cores, exactly
# (fused_reference.py), checked against the plain fp32 reference at each new size's first
# call; each shape keeps the faster of the two.
_ON_TENSOR_CORES = cross_checked(fused_reference.attention, reference.attention, "chunked_prefill's reference",
                                 compiles=True)


def _reference(inputs: dict):
    return _ON_TENSOR_CORES if inputs["q"].is_cuda and fused_reference.ON_CUDA else reference.attention


def attention(inputs: dict):
    return (_reference(inputs)(*(inputs[n] for n in _ARGUMENTS)),)


def rounded_attention(inputs: dict):
    # Always the plain one: asked for only when an output misses its limit, and a last-bit
    # difference between the two paths flips a bf16 rounding of P or o (2^-9 of an element),
    # past what the cross-check allows.
    return (reference.attention(*(inputs[n] for n in _ARGUMENTS), rounded=True),)


def visible_pairs(dims) -> int:
    """The long prefill's (query, key) pairs at its shortest chunk: a lower bound on every
    draw's work, so the physical floor stays safe."""
    n, context = reference.shortest_long_chunk(dims["Q"], dims["B"]), dims["L"]
    return n * (context - n) + n * (n + 1) // 2


def flops(dims) -> float:
    return 4.0 * visible_pairs(dims) * dims["D"] * dims["Hq"]


def bytes_moved(dims) -> float:
    """q read and o written, and the long prefill's own K and V (a lower bound)."""
    return float(2 * 2 * dims["Q"] * dims["Hq"] * dims["D"] + 2 * 2 * dims["L"] * dims["Hkv"] * dims["D"])


def _domain(max_q: int, max_l: int, max_heads: int, kv_heads: tuple[int, ...], head_dims: tuple[int, ...],
            pages: tuple[int, ...], max_cache: int) -> SizeDomain:
    return SizeDomain(
        {"B": IntRange(1, 64), "Q": IntRange(1, max_q), "L": IntRange(1, max_l), "Hq": IntRange(1, max_heads),
         "Hkv": Choice(kv_heads), "D": Choice(head_dims), "P": Choice(pages)},
        # The long chunk (at least Q - B + 1 tokens) fits in the longest context; the whole
        # cache (every sequence at L at most) stays under max_cache elements per K or V.
        constraint=lambda d: (d["Hq"] % d["Hkv"] == 0 and d["B"] <= d["Q"] <= d["L"] + d["B"] - 1
                              and d["B"] * d["L"] * d["Hkv"] * d["D"] <= max_cache),
        constraint_text=f"Hq a multiple of Hkv, B <= Q <= L + B - 1, B*L*Hkv*D <= {max_cache}",
    )


ENVIRONMENT = Environment(
    name="chunked_prefill",
    version="1",
    contract=Contract(
        inputs=(TensorSpec("q", "bfloat16", ("Q", "Hq", "D")),
                TensorSpec("k_cache", "bfloat16", (reference.CACHE_PAGES, "Hkv", "P", "D")),
                TensorSpec("v_cache", "bfloat16", (reference.CACHE_PAGES, "Hkv", "P", "D")),
                TensorSpec("block_table", "int32", ("B", reference.TABLE_WIDTH)), TensorSpec("cache_seqlens", "int32", ("B",)),
                TensorSpec("cu_seqlens_q", "int32", ("B + 1",)), ScalarSpec("max_seqlen_q", int),
                ScalarSpec("softmax_scale")),
        outputs=(TensorSpec("o", "bfloat16", ("Q", "Hq", "D")),),
    ),
    make_inputs=reference.make_inputs,
    reference=attention,
    # Calibrated on the CPU (python tools/probes/prefill_tolerance.py): a FlashAttention-style
    # bf16 forward (P rounded to bf16 before P V, o rounded to bf16) is 0.0007-0.0024
    # normwise from the fp32 reference; an fp8 (e4m3) round trip of the output 0.026-0.028.
    # 0.006 is 2.5x the bf16 math and fails fp8 by 4x.
    tolerance={"o": Normwise(limit=6e-3)},
    rounded_reference=rounded_attention,
    cost=Cost(flops=flops, bytes=bytes_moved, unit="TF/s"),
    profiles={
        "cuda": Profile(
            sizes=({"B": 8, "Q": 8192, "L": 8192, "Hq": 32, "Hkv": 8, "D": 128, "P": 64},
                   {"B": 1, "Q": 8192, "L": 131072, "Hq": 32, "Hkv": 8, "D": 128, "P": 128},
                   {"B": 64, "Q": 4096, "L": 4096, "Hq": 16, "Hkv": 16, "D": 64, "P": 16},
                   {"B": 16, "Q": 16384, "L": 32768, "Hq": 32, "Hkv": 4, "D": 128, "P": 64},
                   {"B": 4, "Q": 4096, "L": 16384, "Hq": 16, "Hkv": 2, "D": 256, "P": 64}),
            domain=_domain(32768, 131072, 32, (1, 2, 4, 8, 16, 32), (64, 128, 256), (16, 64, 128), 1 << 30),
            expert=EXPERT / "expert_cuda.py",
            baselines={"flex_attention": EXPERT / "flex_attention_paged.py"},
            call_timeout_s=120.0,
            # A split-KV kernel's partial outputs and statistics: under 1 GiB at the largest size.
            memory_gib=8.0,
            # Millisecond kernels whose fp32 reference costs more than they do: 2 + 10 rounds.
            timing=(2, 10),
            fuzz_examples=4),
        "cpu": Profile(
            sizes=({"B": 3, "Q": 40, "L": 96, "Hq": 4, "Hkv": 2, "D": 32, "P": 16},
                   {"B": 2, "Q": 17, "L": 64, "Hq": 2, "Hkv": 1, "D": 64, "P": 16}),
            domain=_domain(48, 96, 4, (1, 2, 4), (16, 32), (16,), 1 << 16),
            expert=EXPERT / "expert_cpu.py", call_timeout_s=120.0, fuzz_examples=5),
    },
    forbid=ATTENTION_LIBRARIES,  # cuDNN, torch's SDPA kernels, FlexAttention, attention packages
)
