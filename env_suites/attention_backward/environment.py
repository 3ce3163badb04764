"""attention_backward: gradients of attention over packed documents, causal sliding windows, GQA.

``kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale) -> (dq, dk, dv)``;
see TASK.md for the contract. The reference is ``reference.backward`` (fp32, chunked).
"""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import torch

from env_suites.attention_backward import fused_reference, reference
from pytest_nodus.grader.exact_products import cross_checked
from pytest_nodus import (ATTENTION_LIBRARIES, Choice, Contract, Cost, Environment, IntRange, Normwise, Profile,
                          ScalarSpec, SizeDomain, TensorSpec)

EXPERT = Path(__file__).resolve().parents[2] / "expert" / "attention_backward"


def document_lengths(tokens: int, documents: int, generator: torch.Generator) -> list[int]:
    """A random split of ``tokens`` into ``documents`` non-empty documents; with three or
    more, one of them is a single token (the edge a kernel's masking most often misses)."""
    documents = min(documents, tokens)
    single = documents >= 3
    rest_tokens, rest_docs = tokens - single, documents - single
    device = generator.device  # draws on the generator's own device (a CUDA generator on the GPU)
    cuts = (torch.randperm(rest_tokens - 1, generator=generator, device=device)[: rest_docs - 1] + 1).tolist() \
        if rest_docs > 1 else []
    bounds = [0, *sorted(int(c) for c in cuts), rest_tokens]
    lengths = [b - a for a, b in zip(bounds, bounds[1:])]
    if single:
        lengths.insert(int(torch.randint(0, len(lengths) + 1, (1,), generator=generator, device=device)), 1)
    return lengths


def make_inputs(dims, generator: torch.Generator, device: torch.device) -> dict:
    t, hq, hkv, d, window = dims["T"], dims["Hq"], dims["Hkv"], dims["D"], dims["W"]
    lengths = document_lengths(t, dims["B"], generator)
    cu_seqlens = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device=device)

    def randn(heads):
        # Unit-variance q and k with scale 1/sqrt(D) give logits of unit spread: softmax
        # neither flat nor one-hot.
        return torch.randn(t, heads, d, generator=generator, device=device).to(torch.bfloat16)

    q, k, v, do = randn(hq), randn(hkv), randn(hkv), randn(hq)
    scale = 1.0 / math.sqrt(d)
    o, lse = _math(q).forward(q, k, v, cu_seqlens, window, scale)
    return {"q": q, "k": k, "v": v, "o": o.to(torch.bfloat16), "lse": lse, "do": do, "cu_seqlens": cu_seqlens,
            "max_seqlen": max(lengths), "window": window, "softmax_scale": scale}


# On a GPU the references are Triton kernels with their products on tensor cores, exactly
# (fused_reference.py), each checked against the plain fp32 one at each new size's first
# call; each shape keeps the faster of the two.
_ON_TENSOR_CORES = SimpleNamespace(
    forward=cross_checked(fused_reference.forward, reference.forward, "attention_backward's forward",
                          compiles=True),
    backward=cross_checked(fused_reference.backward, reference.backward, "attention_backward's reference",
                           common_scale=True, compiles=True))


def _math(q: torch.Tensor):
    return _ON_TENSOR_CORES if q.is_cuda and fused_reference.ON_CUDA else reference


def reference_gradients(inputs: dict) -> tuple[torch.Tensor, ...]:
    return _math(inputs["q"]).backward(inputs["q"], inputs["k"], inputs["v"], inputs["o"], inputs["do"],
                                       inputs["cu_seqlens"], inputs["window"], inputs["softmax_scale"])


def rounded_gradients(inputs: dict) -> tuple[torch.Tensor, ...]:
    # Always the plain one: asked for only when an output misses its limit, and its bf16
    # roundings flip on last-bit differences, past what the cross-check allows.
    return reference.backward(inputs["q"], inputs["k"], inputs["v"], inputs["o"], inputs["do"],
                              inputs["cu_seqlens"], inputs["window"], inputs["softmax_scale"], rounded=True)


def visible_pairs(dims) -> int:
    """Unmasked (query, key) pairs if the documents were equal: a lower bound for any split
    (the per-document count is convex in its length), so the physical floor stays safe."""
    t, docs, window = dims["T"], min(dims["B"], dims["T"]), dims["W"]
    pairs = 0
    for length in [t // docs + (i < t % docs) for i in range(docs)]:
        w = length if window < 0 else min(window, length)
        pairs += w * (w + 1) // 2 + (length - w) * w
    return pairs


def flops(dims) -> float:
    return 2.5 * 4.0 * visible_pairs(dims) * dims["D"] * dims["Hq"]  # backward = 2.5 x forward


def bytes_moved(dims) -> float:
    t, hq, hkv, d = dims["T"], dims["Hq"], dims["Hkv"], dims["D"]
    reads = 2 * (3 * t * hq * d + 2 * t * hkv * d) + 4 * hq * t
    writes = 2 * (t * hq * d + 2 * t * hkv * d)
    return float(reads + writes)


def _domain(max_t: int, heads: tuple[int, ...], head_dims: tuple[int, ...], windows: tuple[int, ...]) -> SizeDomain:
    return SizeDomain(
        {"T": IntRange(1, max_t), "Hq": Choice(heads), "Hkv": Choice(heads), "D": Choice(head_dims),
         "B": IntRange(1, 64), "W": Choice(windows)},
        constraint=lambda d: d["Hq"] % d["Hkv"] == 0 and d["B"] <= d["T"],
        constraint_text="Hq a multiple of Hkv, B <= T",
    )


# dQ and dK can cancel to zero (a window of 1, one-token documents); dV = P^T dO cannot.
_GRADIENT = Normwise(limit=6e-3, floor_from="dv", floor_fraction=1e-2)

ENVIRONMENT = Environment(
    name="attention_backward",
    version="1",
    contract=Contract(
        inputs=(TensorSpec("q", "bfloat16", ("T", "Hq", "D")), TensorSpec("k", "bfloat16", ("T", "Hkv", "D")),
                TensorSpec("v", "bfloat16", ("T", "Hkv", "D")), TensorSpec("o", "bfloat16", ("T", "Hq", "D")),
                TensorSpec("lse", "float32", ("Hq", "T")), TensorSpec("do", "bfloat16", ("T", "Hq", "D")),
                TensorSpec("cu_seqlens", "int32", ("min(B, T) + 1",)), ScalarSpec("max_seqlen", int),
                ScalarSpec("window", int), ScalarSpec("softmax_scale")),
        outputs=(TensorSpec("dq", "bfloat16", ("T", "Hq", "D")), TensorSpec("dk", "bfloat16", ("T", "Hkv", "D")),
                 TensorSpec("dv", "bfloat16", ("T", "Hkv", "D"))),
    ),
    make_inputs=make_inputs,
    reference=reference_gradients,
    # Calibrated on the CPU (reference vs. a FlashAttention-style bf16 backward: P and dS
    # rounded to bf16 before their matmuls): 0.0023-0.0024 normwise per gradient, and the
    # starting kernel in the Triton interpreter 0.0022-0.0028; an fp8 (e4m3) round trip of
    # the gradients: 0.026. 0.006 is ~2.5x the bf16 math and fails fp8 by 4x.
    tolerance={"dq": _GRADIENT, "dk": _GRADIENT, "dv": Normwise(limit=6e-3)},
    # At a size of a few visible pairs one rounded term is the whole error, and an honest
    # kernel can pass 0.006 there; the bf16 math above makes the same errors (the solution's
    # error over its error, CPU, 600 draws each of T = 2 and 3: 1.00-1.03).
    rounded_reference=rounded_gradients,
    cost=Cost(flops=flops, bytes=bytes_moved, unit="TF/s"),
    profiles={
        "cuda": Profile(
            sizes=({"T": 16384, "Hq": 16, "Hkv": 4, "D": 128, "B": 8, "W": 1024},
                   {"T": 16384, "Hq": 16, "Hkv": 4, "D": 256, "B": 8, "W": 1024},
                   {"T": 32768, "Hq": 32, "Hkv": 8, "D": 256, "B": 16, "W": 4096},
                   {"T": 8192, "Hq": 16, "Hkv": 16, "D": 256, "B": 4, "W": -1}),
            domain=_domain(65536, (1, 2, 4, 8, 16, 32), (64, 128, 256), (-1, 1, 3, 128, 512, 1024, 4096)),
            expert=EXPERT / "expert_cuda.py",
            baselines={"flex_attention": EXPERT / "flex_attention_backward.py"},
            call_timeout_s=120.0,
            # A FlashAttention-style backward needs its fp32 dQ accumulator and row statistics:
            # about 1 GiB at the largest public size; 16 leaves room for far less frugal kernels.
            memory_gib=16.0,
            # Millisecond kernels, and each round's fp32 reference costs more than the kernels:
            # 2 + 10 rounds. The spread over rounds is mostly the inputs' own: documents are
            # drawn fresh each round, so the work of a full-causal size changes with the split.
            timing=(2, 10),
            fuzz_examples=4),
        "cpu": Profile(
            sizes=({"T": 96, "Hq": 4, "Hkv": 2, "D": 32, "B": 3, "W": 24},
                   {"T": 64, "Hq": 2, "Hkv": 1, "D": 64, "B": 2, "W": -1}),
            domain=_domain(80, (1, 2, 4), (16, 32), (-1, 1, 3, 16)),
            expert=EXPERT / "expert_cpu.py", call_timeout_s=120.0, fuzz_examples=5),
    },
    forbid=ATTENTION_LIBRARIES,  # cuDNN, torch's SDPA kernels, FlexAttention, attention packages
)
