"""The output heap: on the GPU, what a call allocates lands in memory the grader can read.

Why: the grader must read a call's outputs where the kernel wrote them. Before this, the
harness copied the outputs into grader-visible receipts, and the grader counted that copy
as part of the fixed cost it measures on the expert and subtracts. But the harness runs in
the submission's process. ``tests/cheats/rmsnorm/skip_output_copy.py`` replaced it with one
that wrote the receipts directly, so it never paid for the copy, and its counted time came
out one output copy shorter than its run.

So every allocation the calling thread makes during a call (outputs, workspaces) comes
from a torch ``MemPool`` whose segments are carved from a heap region of the grader's
arena, and so does what autograd's CUDA device thread allocates (sandbox/heap.py). (Threads
the submission starts itself allocate elsewhere, and their outputs are copied.) The
harness then only tells the grader, in stream order, where each output starts (one word
per output next to the flag word, ``shared/arena.py``). The grader copies from
there on its own stream, once the flag is written. No harness work sits between the
kernel and the flag that a rewritten harness could leave out.

The heap's allocator is a small C file, built here by the grader (trusted) with the system C
compiler, which Triton needs on any GPU machine anyway. torch can only plug in an
allocator from a shared library. A Python callback would have to take the GIL inside
torch's allocator lock, and a thread that frees a tensor holds the GIL while it waits for
that lock: a deadlock. When the heap is full, the allocator falls back to ``cuMemAlloc``.
An output outside the heap is copied into its receipt by the harness: correct, but the
copy is then timed as part of the call.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

HEAP_ALIGN = 512  # torch's own segment alignment; outputs start 16-byte aligned at least

_SOURCE = r"""
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

/* First fit over one region with coalescing; a fixed table of blocks sorted by address. */
#define MAX_BLOCKS 8192
typedef struct { size_t off, size; int used; } block_t;
static block_t blocks[MAX_BLOCKS];
static int n_blocks = 0;
static uintptr_t base = 0;
static size_t capacity = 0;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
typedef int (*mem_alloc_t)(uintptr_t *, size_t);
typedef int (*mem_free_t)(uintptr_t);
static mem_alloc_t fallback_alloc = 0;
static mem_free_t fallback_free = 0;
static size_t fallbacks = 0;

int nodus_heap_init(void *region, size_t bytes) {
    void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (cuda) {
        fallback_alloc = (mem_alloc_t)dlsym(cuda, "cuMemAlloc_v2");
        fallback_free = (mem_free_t)dlsym(cuda, "cuMemFree_v2");
    }
    pthread_mutex_lock(&lock);
    base = (uintptr_t)region;
    capacity = bytes;
    n_blocks = 1;
    blocks[0].off = 0; blocks[0].size = bytes; blocks[0].used = 0;
    pthread_mutex_unlock(&lock);
    return fallback_alloc != 0;
}

size_t nodus_heap_fallbacks(void) { return fallbacks; }

void *nodus_heap_alloc(ssize_t size, int device, void *stream) {
    (void)device; (void)stream;
    size_t need = ((size_t)(size > 0 ? size : 1) + 511) & ~(size_t)511;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_blocks; i++) {
        if (blocks[i].used || blocks[i].size < need) continue;
        if (blocks[i].size > need && n_blocks < MAX_BLOCKS) {
            memmove(&blocks[i + 2], &blocks[i + 1], sizeof(block_t) * (size_t)(n_blocks - i - 1));
            blocks[i + 1].off = blocks[i].off + need;
            blocks[i + 1].size = blocks[i].size - need;
            blocks[i + 1].used = 0;
            blocks[i].size = need;
            n_blocks++;
        }
        blocks[i].used = 1;
        void *p = (void *)(base + blocks[i].off);
        pthread_mutex_unlock(&lock);
        return p;
    }
    fallbacks++;
    pthread_mutex_unlock(&lock);
    uintptr_t p = 0;
    if (fallback_alloc && fallback_alloc(&p, need) == 0) return (void *)p;
    return 0;
}

void nodus_heap_free(void *ptr, ssize_t size, int device, void *stream) {
    (void)size; (void)device; (void)stream;
    uintptr_t p = (uintptr_t)ptr;
    if (p < base || p >= base + capacity) {
        if (fallback_free) fallback_free(p);
        return;
    }
    pthread_mutex_lock(&lock);
    for (int i = 0; i < n_blocks; i++) {
        if (base + blocks[i].off != p) continue;
        blocks[i].used = 0;
        if (i + 1 < n_blocks && !blocks[i + 1].used) {
            blocks[i].size += blocks[i + 1].size;
            memmove(&blocks[i + 1], &blocks[i + 2], sizeof(block_t) * (size_t)(n_blocks - i - 2));
            n_blocks--;
        }
        if (i > 0 && !blocks[i - 1].used) {
            blocks[i - 1].size += blocks[i].size;
            memmove(&blocks[i], &blocks[i + 1], sizeof(block_t) * (size_t)(n_blocks - i - 1));
            n_blocks--;
        }
        break;
    }
    pthread_mutex_unlock(&lock);
}
"""


def heap_bytes(call_bytes: int) -> int:
    """Heap size for a sandbox whose calls place ``call_bytes`` of inputs and outputs: room
    for the outputs, workspaces as large as the inputs twice over, and the caching
    allocator's rounding."""
    return -(-(2 * call_bytes + (256 << 20)) // HEAP_ALIGN) * HEAP_ALIGN


def build() -> Path:
    """Compile the allocator once per machine and source (cached by hash). Grader side."""
    digest = hashlib.sha256(_SOURCE.encode()).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"nodus-heap-{digest}.so"
    if target.exists():
        return target
    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "heap.c"
        source.write_text(_SOURCE)
        built = Path(tmp) / "heap.so"
        compiler = os.environ.get("CC", "cc")
        subprocess.run([compiler, "-O2", "-shared", "-fPIC", "-o", str(built), str(source), "-ldl", "-lpthread"],
                       check=True, capture_output=True)
        partial = target.with_suffix(f".{os.getpid()}.tmp")
        os.replace(built, partial)
        os.replace(partial, target)  # atomic: xdist workers may build at once
    return target
