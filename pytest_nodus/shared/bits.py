"""Bit-level tensor helpers both processes use: equality that sees NaN, and poison."""

from __future__ import annotations


def same_bits(a, b) -> bool:
    """Bitwise equality (NaN-safe): used to prove inputs and outputs unchanged."""
    import torch

    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.is_floating_point:
        width = {2: torch.int16, 4: torch.int32, 8: torch.int64, 1: torch.uint8}[a.element_size()]
        return torch.equal(a.contiguous().view(width), b.contiguous().view(width))
    return torch.equal(a, b)


def poison_(tensor) -> None:
    """Fill a receipt with NaN (or the max value for integers) before each call."""
    import torch

    if tensor.dtype.is_floating_point:
        tensor.fill_(float("nan"))
    else:
        tensor.fill_(torch.iinfo(tensor.dtype).max)
