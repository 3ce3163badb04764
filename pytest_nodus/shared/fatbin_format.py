"""The fatbin format: how a CUDA library's GPU code lies in its file and in memory.

A CUDA library carries its GPU code in the ELF section ``.nv_fatbin``: one fatbin per
translation unit, each a header followed by entries (a cubin per architecture, PTX, most
of them compressed). Both halves of kernel removal read it: the grader to find the fatbins
that hold forbidden kernels (``grader/fatbin_scan.py``), the sandbox to check, before it
overwrites one, that it is the fatbin the grader saw (``sandbox/fatbin_removal.py``).

Format (cuobjdump's and the public decompressors' reading of it; little-endian):
  fatbin header: u32 magic 0xBA55ED50, u16 version, u16 header size, u64 size of the entries.
  fatbins follow one another in the section on 8-byte boundaries; the gaps are zeros.
"""
from __future__ import annotations

import os
import struct
from dataclasses import dataclass

FATBIN_MAGIC = 0xBA55ED50
HEADER = struct.Struct("<IHHQ")
_ALIGN = 8


@dataclass(frozen=True)
class Fatbin:
    offset: int  # from the start of the section
    size: int  # header and entries


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
    while at + HEADER.size <= size:
        magic, _version, header_size, entries_size = HEADER.unpack(read(at, HEADER.size))
        if magic != FATBIN_MAGIC:
            if read(at, _ALIGN) != bytes(_ALIGN):
                raise ValueError(f"neither a fatbin nor padding at section offset {at}")
            at += _ALIGN
            continue
        end = at + header_size + entries_size
        if header_size < HEADER.size or end > size:
            raise ValueError(f"fatbin at {at} runs past the section")
        fatbins.append(Fatbin(at, end - at))
        at = (end + _ALIGN - 1) // _ALIGN * _ALIGN
    return fatbins


def loaded_library(prefix: str) -> str | None:
    """Real path of the mapped library whose file name starts with ``prefix``."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            path = line.rstrip().split()[-1]
            if path.startswith("/") and os.path.basename(path).startswith(prefix):
                return os.path.realpath(path)
    return None
