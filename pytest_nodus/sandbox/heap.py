"""Sandbox side of the output heap: a call's allocations come from the arena.

The grader builds the allocator library and reserves the heap region of the arena
(``grader/heap_build.py`` says why outputs must be read where they were written); here it
becomes torch ``MemPool``s, set up before the sandbox is confined.

Which threads allocate there, during each call only: the calling thread (``allocating``)
and autograd's CUDA device thread. Autograd runs a CUDA backward on a thread of its own,
which ``use_mem_pool`` does not route. Unrouted, a kernel that returns gradients made by
autograd (the moe_experts expert, torchtitan's way) would have each copied into its
receipt inside the timed window: a copy of its whole weight gradients per call that no
production run makes, charged to whoever uses autograd. Routed, those gradients are read
where autograd wrote them, as any output made on the calling thread is.

Between calls no route is open (``next_call`` and ``rest``). That is what lets memory go
back: torch releases cached blocks (``empty_cache``, a graph capture's emptying, the retry
after a failed allocation) only while no allocation route is open, and never the blocks of
a pool still in use. The caching allocator keeps a freed block for the stream it was made
on, so a kernel that works on a new stream each call (``tests/correct/rmsnorm/
cuda_graph_per_input.py``) leaves a call's workspace in the pool per call, on a stream no
later call uses. Once the heap has overflowed into ``cuMemAlloc`` segments, the pools are
therefore replaced between calls by fresh ones over the same region and the old ones'
free segments handed back, so such a kernel holds what it holds in a plain process
instead of rising into the GPU memory wall for the grader's doing.
"""

from __future__ import annotations

import ctypes
import threading


class OutputHeap:
    """The MemPools over the heap region: one for the calling thread, one for autograd's
    device thread (torch refuses two routes into one pool)."""

    def __init__(self, library: str, region, device):
        import torch

        self._library = ctypes.CDLL(library)
        self._library.nodus_heap_init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        self._library.nodus_heap_fallbacks.restype = ctypes.c_size_t
        self._library.nodus_heap_init(region.data_ptr(), region.numel())
        self.lo = region.data_ptr()
        self.hi = region.data_ptr() + region.numel()
        self._allocator = torch.cuda.memory.CUDAPluggableAllocator(library, "nodus_heap_alloc", "nodus_heap_free")
        self.device = device
        self._index = torch.cuda._utils._get_device_index(device, optional=True)
        self._fallbacks = 0  # the allocator's count when the pools were last made
        self._new_pools()
        self._autograd_routed = False
        self._leaf = torch.zeros(1, device=device, requires_grad=True)  # what the routing backward runs on

    def allocating(self):
        """Context in which this thread's allocations (on any stream) come from the heap."""
        import torch

        return torch.cuda.use_mem_pool(self.pool, self.device)

    def next_call(self) -> None:
        """Before a call, outside its window: close the last call's route, renew the pools if
        the heap overflowed, open autograd's route for this call."""
        self.rest()
        fallbacks = self._library.nodus_heap_fallbacks()
        if fallbacks != self._fallbacks:
            self._fallbacks = fallbacks
            self._new_pools()
        self._route_autograd_thread()

    def rest(self) -> None:
        """No route open: torch may release what the pools no longer use."""
        import torch

        if self._autograd_routed:
            torch._C._cuda_endAllocateToPool(self._index, self.autograd_pool.id)
            torch._C._cuda_releasePool(self._index, self.autograd_pool.id)  # the use the route's begin took
            self._autograd_routed = False

    def holds(self, tensor) -> bool:
        ptr = tensor.data_ptr()
        return self.lo <= ptr and ptr + tensor.numel() * tensor.element_size() <= self.hi

    def _new_pools(self) -> None:
        """Fresh pools; the old ones, dropped, become freeable, and ``empty_cache`` hands their
        free segments (and any older pool's, freed since) back to the heap or the driver.
        Blocks still in use (the last call's outputs, a kernel's cached buffers) stay where
        they are until freed."""
        import torch

        self.pool = torch.cuda.MemPool(self._allocator.allocator())
        self.autograd_pool = torch.cuda.MemPool(self._allocator.allocator())
        torch.cuda.empty_cache()

    def _route_autograd_thread(self) -> None:
        """Route autograd's CUDA device thread's allocations to the heap, from inside a
        backward that runs on that thread (torch offers no other way to reach it)."""
        import torch

        heap, here = self, threading.get_ident()

        class _Route(torch.autograd.Function):
            @staticmethod
            def forward(ctx, x):
                return x.clone()

            @staticmethod
            def backward(ctx, grad):
                if threading.get_ident() != here:  # the caller's own thread is routed per call only
                    torch._C._cuda_beginAllocateCurrentThreadToPool(heap._index, heap.autograd_pool.id)
                    heap._autograd_routed = True
                return grad

        _Route.apply(self._leaf).sum().backward()
        self._leaf.grad = None
