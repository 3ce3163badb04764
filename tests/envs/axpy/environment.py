"""Test-only environment, declared whole (README, "Adding an environment", shows this file).

``kernel(x, y, alpha) -> out`` with ``out = alpha * x + y`` in fp32, rounded to bf16 once.
"""

from pathlib import Path

import torch

from pytest_nodus import Contract, Cost, ElementwiseRelative, Environment, IntRange, Profile, ScalarSpec, SizeDomain, TensorSpec

HERE = Path(__file__).parent


def make_inputs(dims, generator, device):
    def randn():  # new values every call, timed calls included
        return torch.randn(dims["N"], generator=generator, device=device).to(torch.bfloat16)
    alpha = 0.5 + 1.5 * torch.rand(1, generator=generator, device=device).item()  # fresh per call
    return {"x": randn(), "y": randn(), "alpha": alpha}


def reference(inputs):
    return (inputs["alpha"] * inputs["x"].float() + inputs["y"].float(),)


ENVIRONMENT = Environment(
    name="axpy",
    version="1",
    contract=Contract(inputs=(TensorSpec("x", "bfloat16", ("N",)), TensorSpec("y", "bfloat16", ("N",)), ScalarSpec("alpha")),
                      outputs=(TensorSpec("out", "bfloat16", ("N",)),)),
    make_inputs=make_inputs,
    reference=reference,
    tolerance={"out": ElementwiseRelative(limit=0.01)},  # one bf16 rounding: 0.0039; fp8: ~0.06
    cost=Cost(flops=lambda d: 2.0 * d["N"], bytes=lambda d: 6.0 * d["N"], unit="GB/s"),
    profiles={
        "cuda": Profile(sizes=({"N": 1 << 24},), domain=SizeDomain({"N": IntRange(1, 1 << 26)}), expert=HERE / "expert.py"),
        "cpu": Profile(sizes=({"N": 4096}, {"N": 1000}), domain=SizeDomain({"N": IntRange(1, 1 << 14)}),
                       expert=HERE / "expert.py", call_timeout_s=60.0),
    },
    forbid=(),  # nothing beyond the defaults
)
