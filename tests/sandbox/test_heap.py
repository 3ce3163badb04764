"""The output heap's blocks stay inside the region and never overlap."""

from __future__ import annotations

import ctypes
import random
import pytest
from pytest_nodus.grader import heap_build as heap


REGION = 1 << 20


@pytest.fixture()
def allocator():
    library = ctypes.CDLL(str(heap.build()))
    library.nodus_heap_init.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    library.nodus_heap_alloc.argtypes = [ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.nodus_heap_alloc.restype = ctypes.c_void_p
    library.nodus_heap_free.argtypes = [ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p]
    library.nodus_heap_fallbacks.restype = ctypes.c_size_t
    region = ctypes.create_string_buffer(REGION)
    base = ctypes.addressof(region)
    library.nodus_heap_init(base, REGION)
    return library, base, region


def test_blocks_stay_inside_the_region_and_never_overlap(allocator):
    library, base, _region = allocator
    rng = random.Random(0)
    live: dict[int, int] = {}
    for _ in range(3000):
        if live and rng.random() < 0.45:
            ptr = rng.choice(sorted(live))
            library.nodus_heap_free(ptr, live.pop(ptr), 0, None)
            continue
        size = rng.choice([1, 100, 512, 513, 4096, 30000, 70000])
        ptr = library.nodus_heap_alloc(size, 0, None)
        if ptr is None:  # full: no fallback without a GPU driver
            continue
        assert base <= ptr and ptr + size <= base + REGION
        assert (ptr - base) % heap.HEAP_ALIGN == 0
        for other, other_size in live.items():
            assert ptr + size <= other or other + other_size <= ptr, "overlapping blocks"
        live[ptr] = size
    for ptr, size in live.items():
        library.nodus_heap_free(ptr, size, 0, None)
    # Everything freed coalesces back into one block: the whole region fits again.
    whole = library.nodus_heap_alloc(REGION, 0, None)
    assert whole == base


def test_a_full_heap_refuses_rather_than_overlapping(allocator):
    library, base, _region = allocator
    first = library.nodus_heap_alloc(REGION, 0, None)
    assert first == base
    before = library.nodus_heap_fallbacks()
    assert library.nodus_heap_alloc(512, 0, None) in (None, 0)  # no CUDA driver here to fall back on
    assert library.nodus_heap_fallbacks() == before + 1

