"""Each size's end hands its pools' cached segments back to the output heap.

A pool caches every size's freed segments, and torch never merges two of them: without a
renewal at the end of each size, a later, larger size's outputs would find the heap carved
into pieces too small, fall outside it and be copied inside their timed window, a cost the
grader made (sandbox/heap.py). Runs without a GPU: the harness's FINISH on a heap whose
pools are faked, and the heap's own count of calls served by its pools.
"""

from __future__ import annotations

import torch

from pytest_nodus.sandbox.harness import Harness
from pytest_nodus.sandbox.heap import OutputHeap
from pytest_nodus.shared import protocol


class _Library:
    count = 0

    def nodus_heap_fallbacks(self):
        return self.count


def _heap():
    heap = object.__new__(OutputHeap)
    heap._library = _Library()
    heap._calls = 0
    heap._fallbacks = 0
    heap._autograd_routed = True
    heap.pools_made = 0

    def new_pools():
        heap.pools_made += 1

    heap._new_pools = new_pools
    heap.rest = lambda: None
    return heap


def _harness(heap):
    harness = object.__new__(Harness)
    harness.device = torch.device("cuda")  # a device object only: nothing here reaches a GPU
    harness.returned = None
    harness.tripwire = None
    harness.heap = heap
    return harness


def test_finish_renews_the_heap_pools():
    heap = _heap()
    for _ in range(3):
        heap.next_call()
    reply = _harness(heap).finish({"op": protocol.FINISH, "audit": False})
    assert reply["ok"] and heap.pools_made == 1


def test_the_next_size_first_call_counts_as_its_new_pools_first():
    heap = _heap()
    for _ in range(3):
        heap.next_call()
    heap.renew()
    made = heap.pools_made
    heap.next_call()  # the next size's first call overflows: its new pools' first segments
    heap._library.count += 2
    heap.next_call()
    assert heap.pools_made == made  # a first call in fresh pools may grow them: no renewal for it
