"""The arena: one block of grader-owned memory per sandbox, and where things lie in it.

Memory is owned by the grader and shared with the sandbox, never the other way round (a
handle the submission chose could point the grader at someone else's memory, such as the
expert's outputs). On the CPU the arena is a file both processes map; on the GPU a driver
allocation exported as a file descriptor the sandbox inherits (``shared/vmm.py``). The
sandbox maps it at start-up, before it is confined.

Layout, from the start::

    [ slots: inputs and receipts of two calls | heap (GPU) | FLAG_BYTES ]

- *Slots*: every call's inputs and output receipts are views at offsets the grader picks
  (``grader/inputs.py``), each starting on an ``ALIGN`` boundary, the two halves of the
  slot region alternating between calls.
- *Heap* (GPU only): where the sandbox's allocations during a call come from, so the grader
  reads outputs where the kernel wrote them (``sandbox/heap.py``).
- *Flag bytes*: the last ``FLAG_BYTES``. At offset 0 the flag word (int32, the call's
  number once the call has returned on its stream); at ``GO_WORD_AT`` the go word (int32,
  the call's number once the grader's stream has put its inputs in place: the sandbox's
  stream waits for it); at ``OUTPUT_WORDS_AT`` one int64 per output, the byte offset in the
  arena where that output starts (-1: none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

ALIGN = 1024  # bytes: every tensor in an arena starts on this boundary
FLAG_BYTES = 1024  # the arena's last bytes hold the flag word and the output words; nothing else goes there
GO_WORD_AT = 32  # byte offset, in those last bytes, of the go word
OUTPUT_WORDS_AT = 64  # byte offset, in those last bytes, of one int64 per output
MAX_OUTPUTS = (FLAG_BYTES - OUTPUT_WORDS_AT) // 8


def tensor_nbytes(shape, dtype) -> int:
    """Bytes of a dense tensor; ``dtype`` is a torch dtype or its name ("bfloat16")."""
    import torch

    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return math.prod(shape) * dtype.itemsize


def aligned(nbytes: int) -> int:
    return -(-max(nbytes, 1) // ALIGN) * ALIGN


def arena_view(arena, offset: int, shape, dtype):
    """The tensor of ``shape`` and ``dtype`` at byte ``offset`` of ``arena`` (uint8)."""
    import torch

    dtype = getattr(torch, dtype) if isinstance(dtype, str) else dtype
    return arena[offset: offset + tensor_nbytes(shape, dtype)].view(dtype).view(tuple(shape))


def flag_word(arena):
    """The flag word at the start of the arena's last FLAG_BYTES (same offset on both sides)."""
    import torch

    return arena[arena.numel() - FLAG_BYTES:][:4].view(torch.int32)


def go_word(arena):
    """The go word: the grader's stream writes the call's number there when the call may start."""
    import torch

    return arena[arena.numel() - FLAG_BYTES + GO_WORD_AT:][:4].view(torch.int32)


def output_words(arena):
    """One int64 per output beside the flag: the output's byte offset in the arena, -1 for none."""
    import torch

    return arena[arena.numel() - FLAG_BYTES + OUTPUT_WORDS_AT:].view(torch.int64)


@dataclass(frozen=True)
class SharedCPUTensor:
    """A CPU tensor backed by a file both processes map (its picklable description)."""

    path: str
    nbytes: int
    dtype: str
    shape: tuple[int, ...]

    def open(self):
        import torch

        raw = torch.from_file(self.path, shared=True, size=max(self.nbytes, 1), dtype=torch.uint8)
        return raw[: self.nbytes].view(getattr(torch, self.dtype)).view(self.shape)


def open_shared(description, device=None):
    """Sandbox side: turn the grader's description back into a tensor over its memory."""
    if isinstance(description, SharedCPUTensor):
        return description.open()
    import os

    from pytest_nodus.shared import vmm

    index = device.index if device is not None and device.index is not None else 0
    try:
        mapping = vmm.import_fd(description["vmm_fd"], description["mapped_bytes"], index)
    finally:
        os.close(description["vmm_fd"])  # the mapping holds the memory; the descriptor is not needed again
    return mapping.tensor()[:description["capacity"]]
