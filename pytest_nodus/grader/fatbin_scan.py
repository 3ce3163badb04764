"""Grader half of kernel removal: which fatbins of torch's CUDA library hold forbidden kernels.

With lazy module loading, the default since CUDA 12.2, the driver reads a fatbin from the
library's mapping only when one of its kernels is first launched. The sandbox replaces the
fatbins this module names with zeros in its own mapping before the submission is imported
(``sandbox/fatbin_removal.py``), and Landlock makes the library's file unreadable, so no
intact copy is left. This is how an environment keeps out kernels torch itself carries
(FlashAttention and the memory-efficient attention kernels live in ``libtorch_cuda.so``
beside every op a submission may use), which Landlock alone cannot: the library is mapped
before any submission code runs.

The grader (trusted) reads each fatbin from the library file and asks the CUDA driver for
its kernels' names (``cuLibraryLoadData``, ``cuLibraryEnumerateKernels``,
``cuKernelGetName``): torch's fatbins carry no source names and the entries are compressed,
so the driver is the one reader that always agrees with the loader. The answer is cached
per library file, patterns and GPU (a few seconds once per torch build).
"""
from __future__ import annotations

import ctypes
import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

from pytest_nodus.shared.fatbin_format import elf_section, loaded_library, walk

__all__ = ["forbidden_fatbins", "kernel_names", "loaded_library"]


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
