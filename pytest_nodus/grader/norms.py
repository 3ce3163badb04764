"""Sums of squares in fp64 for the grader's output checks, one pass over the tensor.

The checks (grader/correctness.py) take norms of outputs, references and their differences,
up to 10^8 elements and more, at every verified call of every role. The squares are summed
in fp64: an fp32 running sum of n squares may drift n x 2^-24 of itself (past 1e-3 at 33M
elements). A whole fp64 copy would move four times a bf16 tensor's bytes, so the sum goes a
piece at a time:

- on the GPU, one Triton kernel: each block of ``BLOCK`` elements is read once, squared and
  summed in fp64 into one partial, and the partials are summed in fp64, where a loop of
  torch ops per chunk (a cast, a dot, an add) would launch hundreds of kernels for one norm
  of a large output, host time at every check;
- on the CPU, that loop, in chunks of ``CHUNK`` elements (Triton's interpreter would be
  slower than torch there). On the GPU the loop answers the first norm of each dtype too,
  and the kernel is used from then on only where it agreed with it there.

Runs only in the grader.
"""

from __future__ import annotations

import contextlib

import torch

# Elements per chunk on the CPU: 8 MiB in fp64, inside a CPU's cache.
CHUNK = 1 << 20
# Elements per program on the GPU: 32 per thread of the default 4 warps, and one fp64
# partial per 4096 elements to sum after.
BLOCK = 4096

# Per (device, dtype): whether the kernel's sum, at its first use there, agreed with the
# chunk loop's. Two fp64 sums of the same exact squares in different orders differ by a few
# parts in 10^15; a block left out or misread moves the sum by more than 10^-6 of itself.
_KERNEL_AGREES: dict[tuple, bool] = {}
AGREEMENT = 1e-10

_kernel = None


def _block_squares():
    """The partials' kernel, built on first GPU use."""
    global _kernel
    if _kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def block_squares(x, partials, n, BLOCK: tl.constexpr):
            block = tl.program_id(0)
            index = block.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)  # past 2^31 elements too
            values = tl.load(x + index, mask=index < n, other=0).to(tl.float64)
            tl.store(partials + block, tl.sum(values * values, axis=0))

        _kernel = block_squares
    return _kernel


def squares_by_blocks(flat: torch.Tensor) -> torch.Tensor:
    """The fp64 sum of squares of the contiguous 1-D ``flat``, as a 0-d tensor on its device
    (by the kernel: on the GPU, or on the CPU under Triton's interpreter)."""
    n = flat.numel()
    partials = torch.empty(-(-n // BLOCK), dtype=torch.float64, device=flat.device)
    # Triton launches on the current device, and an xdist worker's GPU need not be it.
    with torch.cuda.device(flat.device) if flat.is_cuda else contextlib.nullcontext():
        _block_squares()[(partials.numel(),)](flat, partials, n, BLOCK=BLOCK)
    return partials.sum()


def sum_of_squares(x: torch.Tensor) -> float:
    """The sum of ``x``'s squares, each squared and summed in fp64."""
    flat = x.reshape(-1)
    if not flat.numel():
        return 0.0
    if not flat.is_contiguous():  # a strided view reshapes to a strided 1-D view
        flat = flat.contiguous()
    if flat.is_cuda:
        key = (str(flat.device), flat.dtype)
        if key not in _KERNEL_AGREES:
            return _first_on(key, flat)
        if _KERNEL_AGREES[key]:
            return float(squares_by_blocks(flat).item())
    return _by_chunks(flat)


def _first_on(key: tuple, flat: torch.Tensor) -> float:
    """The first norm of a dtype on a device: the loop answers, and decides whether the kernel
    answers from then on. A kernel that fails to build there or disagrees is not used again
    (a warning says so): the checks stay right, only slower."""
    import warnings

    want = _by_chunks(flat)
    try:
        got = float(squares_by_blocks(flat).item())
        agrees = abs(got - want) <= AGREEMENT * want
        reason = f"it summed {got!r} where the loop summed {want!r}"
    except Exception as exc:  # noqa: BLE001  the loop answers: a check never fails for the kernel
        agrees, reason = False, f"{type(exc).__name__}: {exc}"
    _KERNEL_AGREES[key] = agrees
    if not agrees:
        warnings.warn(f"pytest-nodus: the norms kernel is not used for {key[1]} on {key[0]}: {reason}", stacklevel=2)
    return want


def _by_chunks(flat: torch.Tensor) -> float:
    total = torch.zeros((), dtype=torch.float64, device=flat.device)
    for start in range(0, flat.numel(), CHUNK):
        part = flat[start:start + CHUNK].double()
        total += torch.dot(part, part)
    return float(total.item())
