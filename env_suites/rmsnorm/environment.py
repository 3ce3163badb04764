"""rmsnorm: the environment declaration (contract, sizes, inputs, reference, tolerance).

``kernel(x, weight, eps) -> y`` with x a contiguous bf16 [M, N], weight bf16 [N], eps a
float, and ``y = x / sqrt(mean(x.float()**2, dim=-1) + eps) * weight.float()`` returned as
a new bf16 [M, N]. Memory-bound: one read of x, one write of y.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_nodus import Contract, Cost, ElementwiseRelative, Environment, IntRange, Profile, ScalarSpec, SizeDomain, TensorSpec

EXPERT = Path(__file__).resolve().parents[2] / "expert" / "rmsnorm"
EPS_CHOICES = (1e-6, 1e-5)  # drawn per call; the compiled expert builds a graph for each


def make_inputs(dims, generator: torch.Generator, device: torch.device) -> dict:
    m, n = dims["M"], dims["N"]
    # Row scales spread over orders of magnitude so a kernel must normalise each row on its
    # own; one row in 16 is scaled down to where eps matters, so eps cannot be ignored.
    scale = torch.exp(1.5 * torch.randn(m, 1, generator=generator, device=device))
    tiny = torch.rand(m, 1, generator=generator, device=device) < 1 / 16
    scale = torch.where(tiny, scale * 1e-3, scale)
    x = (torch.randn(m, n, generator=generator, device=device) * scale).to(torch.bfloat16)
    weight = (1 + 0.5 * torch.randn(n, generator=generator, device=device)).to(torch.bfloat16)
    eps = EPS_CHOICES[int(torch.randint(0, len(EPS_CHOICES), (1,), generator=generator, device=device).item())]
    return {"x": x, "weight": weight, "eps": eps}


def reference(inputs: dict) -> tuple[torch.Tensor]:
    x = inputs["x"].float()
    rstd = torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + inputs["eps"])
    return (x * rstd * inputs["weight"].float(),)


def _domain(max_m: int, max_n: int, max_elements: int) -> SizeDomain:
    return SizeDomain({"M": IntRange(1, max_m), "N": IntRange(1, max_n)},
                      constraint=lambda d: d["M"] * d["N"] <= max_elements,
                      constraint_text=f"M * N <= 2^{max_elements.bit_length() - 1}")


ENVIRONMENT = Environment(
    name="rmsnorm",
    version="1",
    contract=Contract(
        inputs=(TensorSpec("x", "bfloat16", ("M", "N")), TensorSpec("weight", "bfloat16", ("N",)), ScalarSpec("eps")),
        outputs=(TensorSpec("y", "bfloat16", ("M", "N")),),
    ),
    make_inputs=make_inputs,
    reference=reference,
    # Rounding fp32 to bf16 once gives at most 2^-8 = 0.0039 (the expert's error); rounding
    # twice (x*rstd, then *weight) 0.0075. 0.01 passes both; an fp8 round trip gives ~0.08.
    tolerance={"y": ElementwiseRelative(limit=0.01, floor_fraction=1e-2)},
    cost=Cost(flops=lambda d: 4.0 * d["M"] * d["N"], bytes=lambda d: 2.0 * (2 * d["M"] * d["N"] + d["N"]), unit="GB/s"),
    profiles={
        "cuda": Profile(sizes=({"M": 4096, "N": 4096}, {"M": 16384, "N": 4096}, {"M": 8192, "N": 8192},
                               {"M": 16384, "N": 8192}, {"M": 4096, "N": 16384}),
                        domain=_domain(65536, 32768, 1 << 27), expert=EXPERT / "expert_cuda.py",
                        # Whole-tensor float64 math at the largest size (2^27 elements, 1 GiB
                        # a temporary, three alive at once) keeps up to 5 GiB with torch's
                        # cache; so does a CUDA graph's pool beside its warm-up's. 6 GiB holds both.
                        call_timeout_s=30.0, fuzz_examples=12, memory_gib=6.0),
        "cpu": Profile(sizes=({"M": 64, "N": 256}, {"M": 33, "N": 1000}), domain=_domain(128, 4096, 1 << 15),
                       expert=EXPERT / "expert_cpu.py", call_timeout_s=120.0, fuzz_examples=8),
    },
    # Nothing is forbidden: calling torch's RMSNorm (the expert) earns about 0, never more.
    forbid=(),
)
