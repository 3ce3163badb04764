"""How the grader and a sandbox talk: one shared arena per sandbox, messages over pipes.

Memory is owned by the grader and shared with the sandbox, never the other way round (a
handle the submission chose could point the grader at someone else's memory, such as the
expert's outputs). Each sandbox gets one *arena*: on the CPU a file both processes map
(``torch.from_file(shared=True)``), on the GPU a CUDA IPC handle. The sandbox maps it at
start-up, before Landlock confines it: the CUDA driver imports IPC memory by reaching
into the exporting process (pidfd_getfd, which needs ptrace rights), and a confined
process has none over the grader (seen on the H200: "mapping of buffer object failed").
Every call's inputs and receipts are then views at offsets the grader picks.

Messages from the grader to the sandbox are pickled (the sandbox trusts the grader).
Messages from the sandbox are JSON only, size-limited and type-checked by the grader:
unpickling anything the submission could write would hand it the grader process.
"""

from __future__ import annotations

import io
import json
import math
import os
import pickle
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MAX_REPLY_BYTES = 1 << 20
ALIGN = 1024  # bytes: every tensor in an arena starts on this boundary


@dataclass(frozen=True)
class SharedCPUTensor:
    """A CPU tensor backed by a file both processes map (picklable description)."""

    path: str
    nbytes: int
    dtype: str
    shape: tuple[int, ...]

    def open(self):
        import torch

        raw = torch.from_file(self.path, shared=True, size=max(self.nbytes, 1), dtype=torch.uint8)
        return raw[: self.nbytes].view(getattr(torch, self.dtype)).view(self.shape)


def share_cpu_tensor(directory: Path, name: str, shape, dtype):
    """Allocate a zeroed shared CPU tensor in ``directory``; returns (tensor, description)."""
    nbytes = tensor_nbytes(shape, dtype)
    path = str(Path(directory) / name)
    if os.path.exists(path):
        os.remove(path)
    desc = SharedCPUTensor(path, nbytes, str(dtype).removeprefix("torch."), tuple(shape))
    return desc.open(), desc


def create_arena(device, capacity: int, scratch: Path):
    """A grader-owned byte arena for one sandbox; returns (tensor, description)."""
    import torch

    if device.type == "cpu":
        return share_cpu_tensor(scratch, "arena.bin", (capacity,), torch.uint8)
    arena = torch.empty(capacity, dtype=torch.uint8, device=device)
    return arena, describe_cuda_tensor(arena)


def tensor_nbytes(shape, dtype) -> int:
    """Bytes of a dense tensor; ``dtype`` is a torch dtype or its name ("bfloat16")."""
    import torch

    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return math.prod(shape) * dtype.itemsize


def arena_view(arena, offset: int, shape, dtype):
    import torch

    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return arena[offset: offset + tensor_nbytes(shape, dtype)].view(dtype).view(tuple(shape))


def aligned(nbytes: int) -> int:
    return -(-max(nbytes, 1) // ALIGN) * ALIGN


def describe_cuda_tensor(tensor) -> bytes:
    """CUDA IPC handle of a grader-owned tensor, as pickled bytes for the sandbox."""
    from multiprocessing.reduction import ForkingPickler

    import torch.multiprocessing  # noqa: F401  registers torch's CUDA reductions

    buf = io.BytesIO()
    ForkingPickler(buf, pickle.HIGHEST_PROTOCOL).dump(tensor)
    return buf.getvalue()


def open_shared(description):
    """Sandbox side: turn a description back into a tensor aliasing the grader's memory."""
    if isinstance(description, SharedCPUTensor):
        return description.open()
    import torch.multiprocessing  # noqa: F401

    return pickle.loads(description)


class ProtocolError(Exception):
    """The sandbox sent something that is not a well-formed reply."""


def send_request(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def recv_request(conn: Connection) -> dict[str, Any]:
    return pickle.loads(conn.recv_bytes())


def send_reply(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message, allow_nan=True).encode())


def recv_reply(conn: Connection) -> dict[str, Any]:
    try:
        data = conn.recv_bytes(MAX_REPLY_BYTES)
    except OSError as exc:  # message over the size limit
        raise ProtocolError(f"reply too large or unreadable: {exc}") from None
    try:
        message = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError("reply is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("reply is not a JSON object")
    return message
