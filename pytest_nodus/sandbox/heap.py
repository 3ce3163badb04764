"""Sandbox side of the output heap: a call's allocations come from the arena.

The grader builds the allocator library and reserves the heap region of the arena
(``grader/heap_build.py`` says why outputs must be read where they were written); here it
becomes torch ``MemPool``s, set up before the sandbox is confined.

Which threads allocate there: the calling thread, during each call (``allocating``), and
autograd's CUDA device thread, from the first call on (its route closes only to let memory
go back, below, and at ``rest``). Autograd runs a CUDA backward on a thread of its own,
which ``use_mem_pool`` does not route. Unrouted, a kernel that returns gradients made by
autograd (the moe_experts expert, torchtitan's way) would have each copied into its
receipt inside the timed window: a copy of its whole weight gradients per call that no
production run makes, charged to whoever uses autograd. Routed, those gradients are read
where autograd wrote them, as any output made on the calling thread is.

Memory must be able to go back between calls. The caching allocator keeps a freed block
for the stream it was made on, and torch releases cached blocks (``empty_cache``, a graph
capture's emptying, the retry after a failed allocation) only while no allocation route is
open, and never those of a pool still in use. So a kernel that works on a new stream each
call (``tests/correct/rmsnorm/cuda_graph_per_input.py``) would leave a call's workspace in
the pool per call, on a stream no later call uses, and rise into the GPU memory wall for the
grader's doing. ``next_call`` therefore replaces the pools by fresh ones over the same region
(the old ones' free segments handed back) when the pools keep growing: when the last call
overflowed the heap into ``cuMemAlloc`` segments though it was not the pools' first. A
kernel that needs the same memory every call overflows once per pool and size at most, and
then runs in pools that no longer change, as it would in a plain process.

The pools are also renewed at the end of every size (``renew``, at the harness's FINISH). A
pool caches each size's freed segments and torch never merges two segments, so after a few
sizes the heap is carved into cached pieces no larger size fits: its outputs would fall
outside the heap and be copied inside their timed window, a cost the grader made. Renewed,
the next size starts on a heap that holds only what the kernel itself keeps across calls.
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
        self._calls = 0  # calls the current pools have served
        self._fallbacks = 0  # the allocator's count as the last call was armed
        self._autograd_routed = False
        self._leaf = torch.zeros(1, device=device, requires_grad=True)  # what the routing backward runs on
        self._route = _route_function(self)
        self._new_pools()

    def allocating(self):
        """Context in which this thread's allocations (on any stream) come from the heap."""
        import torch

        return torch.cuda.use_mem_pool(self.pool, self.device)

    def next_call(self) -> None:
        """Before a call is armed, outside its window: fresh pools if the current ones keep
        growing (the module's docstring), and autograd's route open."""
        if renew_pools(self._calls, self.fallbacks() - self._fallbacks):
            self.renew()
        if not self._autograd_routed:
            self._route.apply(self._leaf).sum().backward()
            self._leaf.grad = None
        self._fallbacks = self.fallbacks()  # after the renewal and the routing backward: the call's own count
        self._calls += 1

    def renew(self) -> None:
        """Between sizes, outside any window: fresh pools over the freed heap (the module's
        docstring). Blocks still in use stay where they are."""
        self.rest()
        self._new_pools()
        self._calls = 0

    def fallbacks(self) -> int:
        """How many segments the heap has handed to ``cuMemAlloc`` so far, having no room."""
        return self._library.nodus_heap_fallbacks()

    def rest(self) -> None:
        """Close autograd's route: with none open, torch may release what the pools no longer use."""
        import torch

        if self._autograd_routed:
            torch._C._cuda_endAllocateToPool(self._index, self.autograd_pool.id)
            torch._C._cuda_releasePool(self._index, self.autograd_pool.id)  # the use the route's begin took
            self._autograd_routed = False

    def _new_pools(self) -> None:
        """Fresh pools; the old ones, dropped, hand back their free segments, and
        ``empty_cache`` any older pool's freed since. Blocks still in use (the last call's
        outputs, a kernel's cached buffers) stay where they are until freed."""
        import torch

        self.pool = torch.cuda.MemPool(self._allocator.allocator())
        # A pool of its own for autograd's thread: torch lets one pool take one route.
        self.autograd_pool = torch.cuda.MemPool(self._allocator.allocator())
        torch.cuda.empty_cache()

    def holds(self, tensor) -> bool:
        ptr = tensor.data_ptr()
        return self.lo <= ptr and ptr + tensor.numel() * tensor.element_size() <= self.hi


def renew_pools(calls: int, fallbacks_since: int) -> bool:
    """Whether the pools keep growing: the last call (``calls`` served so far) overflowed the
    heap though it was not their first. Only a first call in pools may need new segments."""
    return calls >= 2 and fallbacks_since > 0


def _route_function(heap: OutputHeap):
    """An autograd function whose backward routes the thread it runs on, autograd's CUDA
    device thread, to ``heap.autograd_pool`` (torch offers no other way to reach that thread)."""
    import torch

    here = threading.get_ident()

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

    return _Route
