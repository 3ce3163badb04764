"""Is an output right? Compared with the reference in the grader process, every element.

The submission's process never sees the reference and its word on correctness counts for
nothing: the grader reads the output the sandbox copied into a grader-owned receipt (which
the grader poisoned with NaN before the call) and compares it here.

Tolerances are relative to the reference's magnitude so that trivial outputs (zeros, the
input, a constant) fail, and tight enough that the same math done in a lower precision
(an fp8 round trip, bf16 accumulation) fails; each environment states its calibration.
NaN and inf never pass.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import torch


class Tolerance(Protocol):
    limit: float

    def error(self, output: torch.Tensor, reference: torch.Tensor, references: dict) -> float:
        """A non-negative error; the output passes if error <= limit. NaN/inf give inf.
        ``references`` holds every reference output by name (for scales across outputs)."""

    def worst(self, output: torch.Tensor, reference: torch.Tensor) -> int:
        """The flat index of the element that weighs most in the error (a failing output's report)."""


# Elementwise work is in fp32 (a difference or ratio off by a few parts in 10^7 of itself:
# an error of 1e-2 read as 1e-2 * (1 +- 2e-7)); sums of squares in fp64 (grader/norms.py).


def _norm(x: torch.Tensor) -> float:
    """The Frobenius norm, its squares summed in fp64."""
    from pytest_nodus.grader import norms  # at the first check, as torch in the methods below

    return math.sqrt(norms.sum_of_squares(x))


def _difference(output: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """``output - reference`` in fp32 (at least), a new tensor the caller may change in place."""
    import torch

    return torch.sub(output, reference, out=torch.empty(reference.shape, dtype=torch.promote_types(
        torch.promote_types(output.dtype, reference.dtype), torch.float32), device=reference.device))


def _first_non_finite(out: torch.Tensor) -> int | None:
    import torch

    bad = (~torch.isfinite(out)).flatten().nonzero()
    return int(bad[0]) if len(bad) else None


@dataclass(frozen=True)
class ElementwiseRelative:
    """max_i |out_i - ref_i| / (|ref_i| + floor), floor = floor_fraction * rms(ref).

    Every element must be close relative to its own magnitude; the floor keeps elements
    near zero from demanding more than the output dtype can hold.
    """

    limit: float
    floor_fraction: float = 1e-2

    def error(self, output: torch.Tensor, reference: torch.Tensor, references: dict) -> float:
        import torch

        if not torch.isfinite(output).all():
            return math.inf
        if not reference.numel():
            return 0.0
        rms = _norm(reference) / math.sqrt(reference.numel())
        floor = max(self.floor_fraction * rms, torch.finfo(torch.float32).tiny)
        relative = _difference(output, reference).abs_()
        return relative.div_(reference.abs().add_(floor)).max().item()

    def worst(self, output: torch.Tensor, reference: torch.Tensor) -> int:
        import torch

        out, ref = output.double(), reference.double()
        if (bad := _first_non_finite(out)) is not None:
            return bad
        floor = max(self.floor_fraction * ref.pow(2).mean().sqrt().item(), torch.finfo(torch.float32).tiny)
        return int(((out - ref).abs() / (ref.abs() + floor)).flatten().argmax())


@dataclass(frozen=True)
class Normwise:
    """||out - ref||_F / max(||ref||_F, floor): for outputs that sum many rounded terms.

    An output that is exactly zero in exact arithmetic (a gradient whose terms cancel, e.g.
    dQ when every query sees only itself) comes out of any real computation as rounding
    noise, and noise relative to zero is unbounded. ``floor_from`` names another output that
    cannot cancel, of comparable magnitude, or one of the environment's error scales (the
    size of the terms an output sums); the denominator is never below ``floor_fraction`` of
    its norm.
    """

    limit: float
    floor_from: str | None = None
    floor_fraction: float = 1e-2

    def error(self, output: torch.Tensor, reference: torch.Tensor, references: dict) -> float:
        import torch

        if not torch.isfinite(output).all():
            return math.inf
        denom = _norm(reference)
        if self.floor_from is not None:
            denom = max(denom, self.floor_fraction * _norm(references[self.floor_from]))
        diff = _norm(_difference(output, reference))
        if denom == 0.0:
            return 0.0 if diff == 0.0 else math.inf
        return diff / denom

    def worst(self, output: torch.Tensor, reference: torch.Tensor) -> int:
        out = output.double()
        if (bad := _first_non_finite(out)) is not None:
            return bad
        return int((out - reference.double()).abs().flatten().argmax())


@dataclass
class OutputCheck:
    name: str
    error: float
    limit: float
    worst: str | None = None  # a failing output's worst element: "[i, j] got g, expected e"

    @property
    def passed(self) -> bool:
        return self.error <= self.limit  # NaN compares False: never passes


def _describe_worst(tol, got, ref) -> str:
    import numpy

    flat = tol.worst(got, ref)
    index = [int(i) for i in numpy.unravel_index(flat, tuple(got.shape))] if got.dim() else []
    return (f"{list(index)} got {got.flatten()[flat].item():.6g}, "
            f"expected {ref.flatten()[flat].item():.6g}")


# An output that misses its limit still passes within this factor of the error that the
# environment's rounded reference makes on the same inputs: FlashAttention's own tests hold
# a kernel's gradients to twice the error of the same math in PyTorch at the kernel's dtype
# (Dao-AILab/flash-attention, tests/test_flash_attn.py).
ROUNDED_FACTOR = 2.0


def check_outputs(receipts, references, contract, tolerance, rounded=None, scales=()) -> list[OutputCheck]:
    """Every output against its tolerance. ``rounded``: a callable giving the environment's
    rounded reference on the same inputs, asked for only when an output misses its limit
    (it costs another reference pass). At a size of a handful of terms the rounding of one
    term is the whole error, so a fixed limit fails an honest kernel now and then; the
    rounded reference makes the same rounding errors, and its error widens that output's
    limit (the check reports the limit it applied). ``scales``: the names of the error scales
    that follow the outputs in ``references``."""
    checks = []
    by_name = dict(zip([spec.name for spec in contract.outputs] + list(scales), references))
    for spec, got, ref in zip(contract.outputs, receipts, references):
        tol = tolerance[spec.name]
        checks.append(OutputCheck(spec.name, tol.error(got, ref, by_name), tol.limit))
    if rounded is not None and not all(c.passed for c in checks):
        honest = dict(zip((spec.name for spec in contract.outputs), rounded()))
        for i, check in enumerate(checks):
            if not check.passed:
                honest_error = tolerance[check.name].error(honest[check.name], by_name[check.name], by_name)
                if math.isfinite(honest_error):  # a broken rounded reference widens nothing
                    checks[i] = OutputCheck(check.name, check.error, max(check.limit, ROUNDED_FACTOR * honest_error))
    received = {spec.name: (got, ref) for spec, got, ref in zip(contract.outputs, receipts, references)}
    for check in checks:
        if not check.passed and received[check.name][0].numel():
            check.worst = _describe_worst(tolerance[check.name], *received[check.name])
    return checks
