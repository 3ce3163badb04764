"""How the grader and a sandbox talk: tensors in shared memory, messages over pipes.

Tensors are owned by the grader and shared with the sandbox, never the other way round:
on the CPU as files mapped by both processes (``torch.from_file(shared=True)``), on the
GPU through CUDA IPC handles. The grader keeps every shared tensor alive until the
sandbox is done with it (CUDA IPC requires the producer to outlive the consumer).

Messages from the grader to the sandbox are pickled (the sandbox trusts the grader).
Messages from the sandbox are JSON only, size-limited and type-checked by the grader:
unpickling anything the submission could write would hand it the grader process.
"""

from __future__ import annotations

import io
import json
import os
import pickle
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

MAX_REPLY_BYTES = 1 << 20


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
    import torch

    numel = 1
    for d in shape:
        numel *= d
    nbytes = numel * torch.empty((), dtype=dtype).element_size()
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
