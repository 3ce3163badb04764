"""GPU kernels taken out of a library this process has already loaded.

A CUDA library carries its GPU code in the ELF section ``.nv_fatbin``: one fatbin per
translation unit, each a header followed by entries (a cubin per architecture, PTX, most
of them compressed). With lazy module loading, the default since CUDA 12.2, the driver
reads a fatbin from the library's mapping only when one of its kernels is first launched.
Replacing a fatbin's bytes in a process with zeros (anonymous memory in place of the
library's pages, so that discarding them cannot read the file back) before that moment
removes its kernels from that process for good: a launch fails to load them, and once
Landlock also makes the library's file unreadable (the sandbox does both) no intact copy
is left to restore from.

This is how an environment keeps out kernels that torch itself carries, which Landlock
alone cannot (the library is mapped before any submission code runs): FlashAttention and
the memory-efficient attention kernels live in ``libtorch_cuda.so`` beside every op a
submission may use. The audit in ``sandbox.py`` only reports what the profiler saw, and a
submission can rewrite that report; a kernel that is not there cannot run.

Two halves, in two processes:
- the grader (trusted) finds which fatbins hold a forbidden kernel: it reads each fatbin
  from the library file and asks the CUDA driver for its kernels' names
  (``cuLibraryLoadData``, ``cuLibraryEnumerateKernels``, ``cuKernelGetName``). torch's
  fatbins carry no source names (checked on the H200, run 23), and the entries are
  compressed, so the driver is the one reader that always agrees with the loader. The
  answer is cached per library file (a few seconds once per torch build);
- the sandbox, before confinement and before the submission is imported, zeroes those
  spans in its own address space (:func:`overwrite`), after checking each is the fatbin the
  grader saw.

Format (cuobjdump's and the public decompressors' reading of it; little-endian):
  fatbin header: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries.
  fatbins follow one another in the section on 8-byte boundaries; the gaps are zeros.
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import mmap
import os
import re
import struct
import tempfile
from dataclasses import dataclass
from pathlib import Path

FATBIN_MAGIC = 0xBA55ED50
_FATBIN_HEADER = struct.Struct("<IHHQ")
_MAP_FIXED = 0x10  # Linux, every architecture torch ships for
_ALIGN = 8


@dataclass(frozen=True)
class Fatbin:
    offset: int  # from the start of the section
    size: int  # header and entries


@dataclass
class Removal:
    """What :func:`overwrite` did, for the sandbox's hello and the grade."""
    library: str
    removed: int = 0  # fatbins zeroed
    removed_bytes: int = 0

    def as_dict(self) -> dict:
        return {"library": self.library, "removed": self.removed, "removed_bytes": self.removed_bytes}


def elf_section(path: str, name: str) -> tuple[int, int, int] | None:
    """(virtual address, file offset, size) of section ``name`` of a 64-bit ELF file."""
    with open(path, "rb") as elf:
        head = elf.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2:
            return None
        shoff, = struct.unpack_from("<Q", head, 0x28)
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", head, 0x3A)
        elf.seek(shoff)
        table = elf.read(shentsize * shnum)
        sections = [struct.unpack_from("<IIQQQQ", table, i * shentsize) for i in range(shnum)]
        _, _, _, _, str_offset, str_size = sections[shstrndx]
        elf.seek(str_offset)
        names = elf.read(str_size)
    for name_at, _type, _flags, addr, offset, size in sections:
        if names[name_at:names.index(b"\0", name_at)].decode() == name:
            return addr, offset, size
    return None


def walk(read, size: int) -> list[Fatbin]:
    """The fatbins of a ``.nv_fatbin`` section of ``size`` bytes; ``read(offset, n)``
    returns the section's bytes. Only headers are read: the section is hundreds of MB."""
    fatbins = []
    at = 0
    while at + _FATBIN_HEADER.size <= size:
        magic, _version, header_size, entries_size = _FATBIN_HEADER.unpack(read(at, _FATBIN_HEADER.size))
        if magic != FATBIN_MAGIC:
            if read(at, _ALIGN) != bytes(_ALIGN):
                raise ValueError(f"neither a fatbin nor padding at section offset {at}")
            at += _ALIGN
            continue
        end = at + header_size + entries_size
        if header_size < _FATBIN_HEADER.size or end > size:
            raise ValueError(f"fatbin at {at} runs past the section")
        fatbins.append(Fatbin(at, end - at))
        at = (end + _ALIGN - 1) // _ALIGN * _ALIGN
    return fatbins


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


def loaded_library(prefix: str) -> str | None:
    """Real path of the mapped library whose file name starts with ``prefix``."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rstrip().split()[-1]
            if path.startswith("/") and os.path.basename(path).startswith(prefix):
                return os.path.realpath(path)
    return None


def kernel_names(image: bytes) -> list[str] | None:
    """Mangled names of the kernels in one fatbin, as the CUDA driver reads them; None if
    the driver cannot load it for this GPU (then this GPU cannot run its kernels either)."""
    cuda = _driver()
    buffer = ctypes.create_string_buffer(image, len(image))
    library = ctypes.c_void_p()
    if cuda.cuLibraryLoadData(ctypes.byref(library), buffer, None, None, 0, None, None, 0) != 0:
        return None
    try:
        count = ctypes.c_uint()
        if cuda.cuLibraryGetKernelCount(ctypes.byref(count), library) != 0:
            return None
        kernels = (ctypes.c_void_p * max(count.value, 1))()
        if count.value and cuda.cuLibraryEnumerateKernels(kernels, count, library) != 0:
            return None
        names = []
        for kernel in kernels[:count.value]:
            name = ctypes.c_char_p()
            if cuda.cuKernelGetName(ctypes.byref(name), ctypes.c_void_p(kernel)) == 0 and name.value:
                names.append(name.value.decode("utf-8", "replace"))
        return names
    finally:
        cuda.cuLibraryUnload(library)


_CUDA = None


def _driver():
    global _CUDA
    if _CUDA is None:
        cuda = ctypes.CDLL("libcuda.so.1")
        if cuda.cuInit(0) != 0:
            raise OSError("cuInit failed")
        _CUDA = cuda
    return _CUDA


def forbidden_fatbins(library: str, patterns: tuple[str, ...], cache_dir: Path | None, gpu: str = "") -> dict:
    """The fatbins of ``library`` (a file) holding a kernel whose name matches one of
    ``patterns``: ``{"library", "section": [address, size], "spans": [[offset, size], ...],
    "kernels": n}``, offsets from the start of ``.nv_fatbin``. Cached in ``cache_dir`` per
    library file, patterns and ``gpu`` (its architecture: which fatbins the driver can load,
    and so read names from, depends on it). Grader side: it loads every fatbin into the driver."""
    library = os.path.realpath(library)
    stat = os.stat(library)
    key = hashlib.sha256(json.dumps([library, stat.st_size, stat.st_mtime_ns, list(patterns), gpu]).encode()).hexdigest()
    cached = Path(cache_dir) / f"fatbins-{key[:24]}.json" if cache_dir else None
    if cached is not None and cached.exists():
        try:
            return json.loads(cached.read_text())
        except ValueError:
            pass  # a torn write from a killed run: recompute
    section = elf_section(library, ".nv_fatbin")
    found = {"library": library, "section": list(section[::2]) if section else None, "spans": [], "kernels": 0}
    if section is not None:
        address, offset, size = section
        matcher = re.compile("|".join(f"(?:{p})" for p in patterns))
        with open(library, "rb") as elf:
            def read(at: int, n: int) -> bytes:
                elf.seek(offset + at)
                return elf.read(n)

            for fatbin in walk(read, size):
                names = kernel_names(read(fatbin.offset, fatbin.size)) or []
                hits = [n for n in names if matcher.search(n)]
                if hits:
                    found["spans"].append([fatbin.offset, fatbin.size])
                    found["kernels"] += len(hits)
    if cached is not None:
        cached.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=cached.parent, delete=False) as out:
            json.dump(found, out)
        os.replace(out.name, cached)  # atomic: xdist workers may race to write it
    return found


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
        magic, _v, header_size, entries = _FATBIN_HEADER.unpack(ctypes.string_at(start + offset, _FATBIN_HEADER.size))
        if magic != FATBIN_MAGIC or header_size + entries != length:
            raise ValueError(f"no fatbin of {length} bytes at section offset {offset}: not the library the grader read")
        _overwrite(libc, start + offset, length, mappings)
        removal.removed += 1
        removal.removed_bytes += length
    return removal
