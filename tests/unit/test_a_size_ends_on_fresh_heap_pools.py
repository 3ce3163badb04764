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
from pytest_nodus.shared import protocol
from test_the_heap_renews_its_pools_only_when_they_keep_growing import fake_heap


def _harness(heap):
    harness = object.__new__(Harness)
    harness.device = torch.device("cuda")  # a device object only: nothing here reaches a GPU
    harness.returned = None
    harness.tripwire = None
    harness.heap = heap
    return harness


def test_finish_renews_the_heap_pools():
    heap = fake_heap()
    for _ in range(3):
        heap.next_call()
    reply = _harness(heap).finish({"op": protocol.FINISH, "audit": False})
    assert reply["ok"] and len(heap.renewed) == 1


def test_the_next_size_first_call_counts_as_its_new_pools_first():
    heap = fake_heap()
    for _ in range(3):
        heap.next_call()
    heap.renew()
    made = len(heap.renewed)
    heap.next_call()  # the next size's first call overflows: its new pools' first segments
    heap._library.count += 2
    heap.next_call()
    assert len(heap.renewed) == made  # a first call in fresh pools may grow them: no renewal for it
