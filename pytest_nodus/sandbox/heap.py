"""Sandbox side of the output heap: this thread's allocations during a call come from the arena.

The grader builds the allocator library and reserves the heap region of the arena
(``grader/heap_build.py`` says why outputs must be read where they were written); here it
becomes a torch ``MemPool``, set up before the sandbox is confined.
"""

from __future__ import annotations

import ctypes


class OutputHeap:
    """The MemPool over the heap region."""

    def __init__(self, library: str, region, device):
        import torch

        self._library = ctypes.CDLL(library)
        self._library.nodus_heap_init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._library.nodus_heap_init(region.data_ptr(), region.numel())
        self.lo = region.data_ptr()
        self.hi = region.data_ptr() + region.numel()
        allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "nodus_heap_alloc", "nodus_heap_free")
        self.pool = torch.cuda.MemPool(allocator.allocator())
        self.device = device

    def allocating(self):
        """Context in which this thread's allocations (on any stream) come from the heap."""
        import torch

        return torch.cuda.use_mem_pool(self.pool, self.device)

    def holds(self, tensor) -> bool:
        ptr = tensor.data_ptr()
        return self.lo <= ptr and ptr + tensor.numel() * tensor.element_size() <= self.hi
