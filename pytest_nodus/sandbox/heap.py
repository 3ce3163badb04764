"""Sandbox side of the output heap: a call's allocations come from the arena.

The grader builds the allocator library and reserves the heap region of the arena
(``grader/heap_build.py`` says why outputs must be read where they were written); here it
becomes a torch ``MemPool``, set up before the sandbox is confined.

Which threads allocate there: the calling thread, during each call (``allocating``), and
autograd's CUDA device thread, for good. Autograd runs a CUDA backward on a thread of its
own, which ``use_mem_pool`` does not route. Unrouted, a kernel that returns gradients made
by autograd (the moe_experts expert, torchtitan's way) would have each copied into its
receipt inside the timed window: a copy of its whole weight gradients per call that no
production run makes, charged to whoever uses autograd. Routed, those gradients are read
where autograd wrote them, as any output made on the calling thread is.
"""

from __future__ import annotations

import ctypes
import threading


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
        # A pool of its own over the same heap: torch lets one pool take one thread's routing.
        self.autograd_pool = torch.cuda.MemPool(allocator.allocator())
        self._route_autograd_thread()

    def allocating(self):
        """Context in which this thread's allocations (on any stream) come from the heap."""
        import torch

        return torch.cuda.use_mem_pool(self.pool, self.device)

    def _route_autograd_thread(self) -> None:
        """Route autograd's CUDA device thread's allocations to the heap, from inside a
        backward that runs on that thread (torch offers no other way to reach it). Its
        allocations outside calls (none: the harness runs no backward) would land there too."""
        import torch

        index = torch.cuda._utils._get_device_index(self.device, optional=True)
        pool_id, here = self.autograd_pool.id, threading.get_ident()

        class _Route(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, grad):
                if threading.get_ident() != here:  # the caller's own thread is routed per call only
                    torch._C._cuda_beginAllocateCurrentThreadToPool(index, pool_id)
                return grad

        leaf = torch.zeros(1, device=self.device, requires_grad=True)
        _Route.apply(leaf).sum().backward()
        torch.cuda.synchronize(self.device)

    def holds(self, tensor) -> bool:
        ptr = tensor.data_ptr()
        return self.lo <= ptr and ptr + tensor.numel() * tensor.element_size() <= self.hi
