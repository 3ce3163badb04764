"""The grader makes each sandbox's arena (``shared/arena.py`` has its layout) and hands it over.

The grader owns the memory: on the CPU a file in the sandbox's scratch directory that both
map, on the GPU a device allocation exported as a CUDA IPC handle (pickled with torch's
reductions; only the grader unpickles anything, and only what it made itself).
"""

from __future__ import annotations

import io
import os
import pickle
from pathlib import Path

from pytest_nodus.shared.arena import SharedCPUTensor, tensor_nbytes


def share_cpu_tensor(directory: Path, name: str, shape, dtype):
    """Allocate a zeroed shared CPU tensor in ``directory``; returns (tensor, description)."""
    nbytes = tensor_nbytes(shape, dtype)
    path = str(Path(directory) / name)
    if os.path.exists(path):
        os.remove(path)
    desc = SharedCPUTensor(path, nbytes, str(dtype).removeprefix("torch."), tuple(shape))
    return desc.open(), desc


def describe_cuda_tensor(tensor) -> bytes:
    """CUDA IPC handle of a grader-owned tensor, as pickled bytes for the sandbox."""
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401  registers torch's CUDA reductions

    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(tensor)
    return buf.getvalue()


def create_arena(device, capacity: int, scratch: Path):
    """A grader-owned byte arena for one sandbox; returns (tensor, description)."""
    import torch

    if device.type == "cpu":
        return share_cpu_tensor(scratch, "arena.bin", (capacity,), torch.uint8)
    arena = torch.empty(capacity, dtype=torch.uint8, device=device)
    return arena, describe_cuda_tensor(arena)
