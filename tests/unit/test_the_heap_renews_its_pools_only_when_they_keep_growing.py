"""The output heap renews its pools when they keep growing, and only then.

A kernel that needs the same memory every call overflows the heap at its first call in a
pool and never again: its pools must stay (renewing them would make every call allocate
anew inside its window). A kernel that strands a call's workspace per call (a new stream
each call) overflows every call: its pools are renewed, so what it holds stays bounded.
``OutputHeap.next_call`` runs here on a faked allocator count, without a GPU.
"""

from __future__ import annotations

from pytest_nodus.sandbox.heap import OutputHeap


class _Library:
    """The allocator library's overflow count, moved by hand."""

    count = 0

    def nodus_heap_fallbacks(self):
        return self.count


def fake_heap():
    """An OutputHeap on a faked allocator count, recording each renewal (the calls its pools
    had served) and each rest; also used by test_a_size_ends_on_fresh_heap_pools."""
    heap = object.__new__(OutputHeap)
    heap._library = _Library()
    heap._calls = 0
    heap._fallbacks = 0
    heap._autograd_routed = True  # as after the first call: no routing backward to run
    heap.renewed = []
    heap.rested = 0

    def new_pools():
        heap.renewed.append(heap._calls)

    def rest():
        heap.rested += 1

    heap._new_pools, heap.rest = new_pools, rest
    return heap


def _run(heap, fallbacks_per_call):
    """Arm and run one call per entry, each overflowing the heap that many times; return the
    indices of the calls armed in fresh pools."""
    fresh = []
    for i, fallbacks in enumerate(fallbacks_per_call):
        before = len(heap.renewed)
        heap.next_call()
        if len(heap.renewed) > before:
            fresh.append(i)
        heap._library.count += fallbacks
    return fresh


def test_a_kernel_needing_the_same_memory_each_call_keeps_its_pools():
    heap = fake_heap()
    assert _run(heap, [3, 0, 0, 0, 0, 0]) == []


def test_a_larger_size_renews_the_pools_once():
    heap = fake_heap()
    # the first size settles; the second overflows once in the old pools, once in the new
    assert _run(heap, [3, 0, 0, 2, 2, 0, 0, 0]) == [4]


def test_pools_that_grow_every_call_are_renewed_every_second_call():
    heap = fake_heap()
    assert _run(heap, [2] * 8) == [2, 4, 6]
    assert heap.rested == 3  # every renewal closes autograd's route first: torch frees nothing while one is open
