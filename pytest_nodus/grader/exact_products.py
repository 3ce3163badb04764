"""fp32 references whose matrix products run on tensor cores, and the check that keeps them honest.

An attention reference's operands are bf16 inputs (Q, K, V, dO) or fp32 intermediates (P,
dS). A product of two bf16 values has 16 significand bits and is exact in fp32, so a product
of bf16 operands with fp32 sums is the fp32 product up to the order of its sums. An fp32
operand is split into three bf16 pieces, each the rounding of what the earlier ones left (8
bits each, every subtraction exact in fp32): they sum to it exactly wherever it is above
2^-110, so its product is the three pieces' products, added smallest first
(``exact_kernels.pieces_dot``, used by each environment's ``fused_reference.py``).

Each tensor-core sum in those kernels covers one tile (D or a block of keys or rows: at most
256 terms, 768 over three pieces) before it is added to the running fp32 accumulator in IEEE
fp32: a tensor core's fp32 accumulator need not round to nearest (it truncates in the
measurements of Fasi et al., "Numerical behavior of NVIDIA tensor cores", PeerJ CS 2021), and
over 131072 terms that bias would reach about 1e-3 relative; over 1024 it stays under 1e-5.

``cross_checked`` holds such a reference to the plain fp32 one (FMA products) at each new
shape's first call, and keeps whichever was faster there. On the CPU the kernels run in
Triton's interpreter, with fp32 sums of the same exact products: the tests there check the
algorithm, and only the hardware's sums are left for the GPU's cross-check.
"""

from __future__ import annotations

import contextlib
import time

import torch

from pytest_nodus.grader.devices import settle

# How far the tensor-core reference may read from the plain one at a size's first call before
# the plain one answers from then on: normwise, where the two agree to 1e-7-3e-7 on the CPU
# (tools/probes/exact_references.py) and every environment's tolerance is 6e-3 or wider.
CROSS_CHECK_LIMIT = 1e-5
# The paths ("tensor_cores", "plain") whose outputs answered cross-checked references since
# the grader last asked (answered()): it records them per size, so a grade says which
# reference its verdicts stand on.
_ANSWERED: list[str] = []
# Depth of once() blocks: inside one, the plain reference answers without a cross-check.
_ONCE = [0]


def answered() -> list[str]:
    """The paths that answered since the last call, sorted, once each (empty where no
    reference was cross-checked), and forget them."""
    paths = sorted(set(_ANSWERED))
    _ANSWERED.clear()
    return paths


@contextlib.contextmanager
def once():
    """References asked inside the block are answered by the plain path, unchecked and
    unrecorded: for shapes asked once (a fuzzed size), where the tensor-core path would
    compile its kernels for that shape and both paths would run to cross-check one call,
    several times the plain path's own cost (docs/references.md)."""
    _ONCE[0] += 1
    try:
        yield
    finally:
        _ONCE[0] -= 1


def cross_checked(fast, plain, what: str, common_scale: bool = False, compiles: bool = False,
                  clock=time.perf_counter):
    """``fast`` (a tensor-core reference) where it agrees with ``plain`` (the fp32 FMA one) and
    takes less time: at each new set of input shapes both run, each timed (its GPU work
    waited for) by ``clock``, and every output is compared; later calls with those shapes take
    the faster of the two. Past CROSS_CHECK_LIMIT, or where ``fast`` raises (a GPU or torch
    without the products it needs), ``plain`` answers every call from then on and a warning
    says why. A GPU whose tensor cores sum otherwise than assumed can slow a grade, never
    change a verdict. Which is faster depends on the shapes: the tensor-core path splits each
    fp32 operand into three products, which pays only where the products dominate (the
    prefill's 128k contexts, tools/probes/exact_references.py).

    ``common_scale``: the outputs share units (gradients), and each is compared against the
    largest one's norm. An output that cancels to almost nothing (attention's dQ and dK at a
    window of 1) is then rounding noise in both references, different noise on different
    hardware, and its own norm would call two correct references 100% apart.

    ``compiles``: ``fast`` is a kernel compiled at its first call of a new specialisation,
    so its first time can be mostly the compiler's: where it took longer than ``plain`` it is
    timed once more before it is judged the slower."""
    import warnings

    faster: dict = {}  # shapes -> True where the tensor-core path took less time
    state = {"fast": True}

    def answer(path, outputs):
        _ANSWERED.append(path)
        return outputs

    def timed(fn, args, kwargs):
        start = clock()
        out = _settled(fn(*args, **kwargs))
        return out, clock() - start

    def reference(*args, **kwargs):
        if not state["fast"] or _ONCE[0]:
            return answer("plain", plain(*args, **kwargs))
        key = (tuple(tuple(a.shape) if isinstance(a, torch.Tensor) else a for a in args), tuple(sorted(kwargs.items())))
        if key in faster and faster[key]:
            return answer("tensor_cores", fast(*args, **kwargs))
        if key in faster:
            return answer("plain", plain(*args, **kwargs))
        want, plain_s = timed(plain, args, kwargs)
        try:
            got, fast_s = timed(fast, args, kwargs)
            if compiles and fast_s > plain_s:
                got, fast_s = timed(fast, args, kwargs)
            distance = _distance(want, got, common_scale)
        except Exception as exc:  # noqa: BLE001 - any failure of the fast path hands over to the plain one
            state["fast"] = False
            warnings.warn(f"{what}: the tensor-core reference failed ({type(exc).__name__}: {exc}); "
                          "the plain fp32 one answers from now on", RuntimeWarning, stacklevel=2)
            return answer("plain", want)
        if not distance <= CROSS_CHECK_LIMIT:
            state["fast"] = False
            warnings.warn(f"{what}: the tensor-core reference is {distance:.2e} from the plain fp32 one "
                          f"(limit {CROSS_CHECK_LIMIT:g}); the plain one answers from now on", RuntimeWarning,
                          stacklevel=2)
            return answer("plain", want)
        faster[key] = fast_s < plain_s
        return answer("tensor_cores", got)

    return reference


def _settled(outputs):
    """``outputs`` once the GPU work behind them is done (a reference's time is its GPU's)."""
    tensors = [t for t in (outputs if isinstance(outputs, tuple) else (outputs,)) if isinstance(t, torch.Tensor)]
    if tensors:
        settle(tensors[0].device)
    return outputs


def _distance(want, got, common_scale: bool = False) -> float:
    """The largest normwise distance over the outputs (a tensor or a tuple of them), each
    against its own norm or, with ``common_scale``, against the largest output's."""
    want = want if isinstance(want, tuple) else (want,)
    got = got if isinstance(got, tuple) else (got,)
    if len(want) != len(got) or any(a.shape != b.shape for a, b in zip(want, got)):
        return float("inf")
    norms = [float(torch.linalg.vector_norm(a.double())) for a in want]
    worst = 0.0
    for a, b, norm in zip(want, got, norms):
        scale = max(norms) if common_scale else norm
        diff = float(torch.linalg.vector_norm((b.double() - a.double())))
        worst = max(worst, diff / scale if scale > 0 else (0.0 if diff == 0 else float("inf")))
    return worst
