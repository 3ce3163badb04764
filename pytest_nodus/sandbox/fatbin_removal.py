"""Sandbox half of kernel removal: the named fatbins zeroed in this process, for good.

The grader names the fatbins of a loaded library that hold forbidden kernels
(``grader/fatbin_scan.py``). Before confinement and before the submission is imported, the
sandbox replaces their bytes in its own mapping with anonymous zero pages, after checking
each span is the fatbin the grader saw. Under lazy module loading a fatbin is read only at
a kernel's first launch, so the launch then fails; Landlock then makes the library's file
unreadable, so there is no intact copy to restore from.
"""
from __future__ import annotations

import ctypes
import mmap
import os
from dataclasses import dataclass

from pytest_nodus.shared.fatbin_format import FATBIN_MAGIC, HEADER, loaded_library

_MAP_FIXED = 0x10  # Linux, every architecture torch ships for


@dataclass
class Removal:
    """What :func:`overwrite` did, for the sandbox's hello and the grade."""
    library: str
    removed: int = 0  # fatbins zeroed
    removed_bytes: int = 0

    def as_dict(self) -> dict:
        return {"library": self.library, "removed": self.removed, "removed_bytes": self.removed_bytes}


def _load_bias(path: str) -> int:
    """Where the dynamic loader placed ``path`` (already loaded; never loads it)."""
    class LinkMap(ctypes.Structure):
        _fields_ = [("l_addr", ctypes.c_size_t)]

    library = ctypes.CDLL(path, mode=os.RTLD_NOW | os.RTLD_NOLOAD)
    libc = ctypes.CDLL(None)
    link_map = ctypes.POINTER(LinkMap)()
    if libc.dlinfo(ctypes.c_void_p(library._handle), 2, ctypes.byref(link_map)) != 0:  # RTLD_DI_LINKMAP
        raise OSError(f"dlinfo failed for {path}")
    return link_map.contents.l_addr


def _mappings() -> list[tuple[int, int, int]]:
    """(start, end, protection) of every mapping of this process. Read once per removal:
    zeroing a fatbin gives each page back its protection, so the list stays true."""
    found = []
    with open("/proc/self/maps") as maps:
        for line in maps:
            span, perms = line.split()[:2]
            start, end = (int(x, 16) for x in span.split("-"))
            prot = ((mmap.PROT_READ if perms[0] == "r" else 0) | (mmap.PROT_WRITE if perms[1] == "w" else 0)
                    | (mmap.PROT_EXEC if perms[2] == "x" else 0))
            found.append((start, end, prot))
    return found


def _libc():
    libc = ctypes.CDLL(None, use_errno=True)
    libc.mprotect.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    libc.mmap.restype = ctypes.c_void_p
    libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
    return libc


def _overwrite(libc, first: int, size: int, mappings: list[tuple[int, int, int]]) -> None:
    """Zero [first, first + size) of the library's mapping for good.

    Writing into the private file mapping (copy-on-write) is not enough: ``madvise
    (MADV_DONTNEED)`` drops a private copy, and the next read fills the page from the file
    again, intact (Landlock does not see page faults). So the pages become anonymous
    memory: a fixed anonymous mapping replaces them, the bytes before and after the fatbin
    in its first and last page are copied back, and each page gets its protection back
    (a boundary page may hold the section's neighbours). Discarding an anonymous page reads
    zeros. Pages wholly inside the fatbin are never touched again, so they cost no memory."""
    page = mmap.PAGESIZE
    low, high = first // page * page, (first + size + page - 1) // page * page
    spans = [(max(start, low), min(end, high), prot) for start, end, prot in mappings if start < high and end > low]
    if not spans or spans[0][0] != low or spans[-1][1] != high:
        raise ValueError(f"the fatbin at {first:#x} is not wholly mapped")
    head = ctypes.string_at(low, first - low)
    tail = ctypes.string_at(first + size, high - first - size)
    placed = libc.mmap(low, high - low, mmap.PROT_READ | mmap.PROT_WRITE,
                       mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED, -1, 0)
    if placed != low:
        raise OSError(ctypes.get_errno(), "mmap(MAP_FIXED) failed")
    ctypes.memmove(low, head, len(head))
    ctypes.memmove(first + size, tail, len(tail))
    for span_start, span_end, prot in spans:
        if libc.mprotect(span_start, span_end - span_start, prot) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")


def overwrite(found: dict) -> Removal | None:
    """Sandbox side: zero, in this process's mapping of ``found["library"]``, the fatbins
    :func:`forbidden_fatbins` found. Checks each span is the fatbin the grader saw (magic and
    size) and refuses otherwise. None if that library is not loaded here.

    Must run before any of those kernels is launched, under lazy module loading (the
    sandbox is started with ``CUDA_MODULE_LOADING=LAZY``): a module already on the GPU
    would stay usable."""
    path = found["library"]
    if loaded_library(os.path.basename(path)) != path:
        return None
    removal = Removal(path)
    if not found["spans"]:
        return removal
    address, size = found["section"]
    start = _load_bias(path) + address
    libc, mappings = _libc(), _mappings()
    for offset, length in found["spans"]:
        if offset + length > size:
            raise ValueError(f"fatbin span {offset}+{length} lies outside the section")
        magic, _v, header_size, entries = HEADER.unpack(ctypes.string_at(start + offset, HEADER.size))
        if magic != FATBIN_MAGIC or header_size + entries != length:
            raise ValueError(f"no fatbin of {length} bytes at section offset {offset}: not the library the grader read")
        _overwrite(libc, start + offset, length, mappings)
        removal.removed += 1
        removal.removed_bytes += length
    return removal
