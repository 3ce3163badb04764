"""The grader makes each sandbox's arena (``shared/arena.py`` has its layout) and hands it over.

The grader owns the memory: on the CPU a file in the sandbox's scratch directory that both
map; on the GPU a driver allocation exported as a file descriptor (``shared/vmm.py``), which
the sandbox inherits at its start. Neither needs the two processes to share a uid, so the
submission's sandbox can run as one of its own (``grader/walls.py``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pytest_nodus.shared import vmm
from pytest_nodus.shared.arena import SharedCPUTensor, tensor_nbytes


@dataclass
class GraderArena:
    """One sandbox's arena on the grader's side."""

    tensor: object  # uint8, exactly the capacity asked for
    description: object  # what the sandbox is sent to map the same memory
    pass_fds: tuple[int, ...] = ()  # descriptors the sandbox must inherit; closed here once it has started

    def started(self) -> None:
        """The sandbox holds its copy of the descriptors, or never will."""
        for fd in self.pass_fds:
            os.close(fd)
        self.pass_fds = ()

    def close(self) -> None:
        """Once the sandbox is dead: let the memory go. On the GPU the device finishes all it
        queued first; the mapping is given back as the last view of it is freed (``shared/vmm.py``)."""
        self.started()
        if self.tensor is not None and self.tensor.is_cuda:
            import torch

            torch.cuda.synchronize(self.tensor.device)
        self.tensor = None


def share_cpu_tensor(directory: Path, name: str, shape, dtype):
    """Allocate a zeroed shared CPU tensor in ``directory``; returns (tensor, description)."""
    nbytes = tensor_nbytes(shape, dtype)
    path = str(Path(directory) / name)
    if os.path.exists(path):
        os.remove(path)
    desc = SharedCPUTensor(path, nbytes, str(dtype).removeprefix("torch."), tuple(shape))
    return desc.open(), desc


def create_arena(device, capacity: int, scratch: Path, owner: int | None = None) -> GraderArena:
    """A grader-owned byte arena for one sandbox. ``owner``: the uid the sandbox runs as,
    when not the grader's (the CPU arena's file must be its to map)."""
    import torch

    if device.type == "cpu":
        tensor, description = share_cpu_tensor(scratch, "arena.bin", (capacity,), torch.uint8)
        if owner is not None:
            os.chown(description.path, owner, owner)
        return GraderArena(tensor, description)
    index = device.index if device.index is not None else torch.cuda.current_device()
    with torch.cuda.device(index):
        mapping, fd = vmm.create(capacity, index)
    description = {"vmm_fd": fd, "mapped_bytes": mapping.nbytes, "capacity": capacity}
    return GraderArena(mapping.tensor()[:capacity], description, (fd,))
