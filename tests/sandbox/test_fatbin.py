"""Fatbins are found in a library's section and zeroed in this process only, after a check."""

from __future__ import annotations

import ctypes
import hashlib
import mmap
import shutil
import struct
import subprocess
import pytest
from pytest_nodus.grader import fatbin_scan
from pytest_nodus.sandbox import fatbin_removal
from pytest_nodus.shared import fatbin_format


def _fatbin(entries_size: int, fill: int) -> bytes:
    return struct.pack("<IHHQ", fatbin_format.FATBIN_MAGIC, 1, 16, entries_size) + bytes([fill]) * entries_size


# Three fatbins: 16+40, then 16+13 (so the third starts after zero padding), then 16+24.
SECTION = [_fatbin(40, 0xA1), _fatbin(13, 0xB2), _fatbin(24, 0xC3)]


def _layout() -> bytes:
    out = b""
    for blob in SECTION:
        out += blob + bytes(-len(blob) % 8)
    return out


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    data = _layout()
    where = tmp_path_factory.mktemp("fatbin")
    source = where / "stand_in.c"
    source.write_text(
        '__attribute__((section(".nv_fatbin"), aligned(8), used)) const unsigned char fatbins[] = {'
        + ",".join(str(b) for b in data) + "};\nint stand_in(void) { return 7; }\n")
    path = where / "libnodus_stand_in.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O0", "-o", str(path), str(source)], check=True)
    return path


def test_walk_finds_each_fatbin_across_padding(library):
    _address, offset, size = fatbin_format.elf_section(str(library), ".nv_fatbin")
    raw = library.read_bytes()[offset:offset + size]
    found = fatbin_format.walk(lambda at, n: raw[at:at + n], size)
    assert [(f.offset, f.size) for f in found] == [(0, 56), (56, 29), (88, 40)]


def test_walk_refuses_what_is_not_a_fatbin():
    junk = _layout() + b"\x01" + bytes(15)
    with pytest.raises(ValueError, match="neither a fatbin nor padding"):
        fatbin_format.walk(lambda at, n: junk[at:at + n], len(junk))


def test_overwrite_zeroes_only_the_named_fatbins_in_this_process(library):
    loaded = ctypes.CDLL(str(library))
    assert loaded.stand_in() == 7
    address, _offset, size = fatbin_format.elf_section(str(library), ".nv_fatbin")
    before = hashlib.sha256(library.read_bytes()).hexdigest()
    found = {"library": str(library.resolve()), "section": [address, size], "spans": [[56, 29]], "kernels": 1}
    removal = fatbin_removal.overwrite(found)
    assert removal.as_dict() == {"library": str(library.resolve()), "removed": 1, "removed_bytes": 29}
    start = fatbin_removal._load_bias(str(library.resolve())) + address
    memory = ctypes.string_at(start, size)
    assert memory[56:85] == bytes(29)  # gone, header and all
    assert memory[:56] == SECTION[0] and memory[88:128] == SECTION[2]  # neighbours intact
    assert loaded.stand_in() == 7  # the library's code still runs (protections restored)
    assert hashlib.sha256(library.read_bytes()).hexdigest() == before  # the file is untouched
    # A submission that discards the pages must not get the file's bytes back: on a private
    # file mapping MADV_DONTNEED would refill them from the file.
    libc = ctypes.CDLL(None, use_errno=True)
    libc.madvise.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    page = mmap.PAGESIZE
    low = (start + 56) // page * page
    assert libc.madvise(low, (start + 85 - low + page - 1) // page * page, mmap.MADV_DONTNEED) == 0
    assert ctypes.string_at(start + 56, 29) == bytes(29)


def test_overwrite_refuses_a_span_that_is_not_the_fatbin_the_grader_saw(library):
    ctypes.CDLL(str(library))
    address, _offset, size = fatbin_format.elf_section(str(library), ".nv_fatbin")
    found = {"library": str(library.resolve()), "section": [address, size], "spans": [[56, 30]], "kernels": 1}
    with pytest.raises(ValueError, match="not the library the grader read"):
        fatbin_removal.overwrite(found)


def test_overwrite_of_a_library_not_loaded_here_does_nothing(tmp_path):
    assert fatbin_removal.overwrite({"library": str(tmp_path / "libabsent.so"), "section": [0, 0], "spans": []}) is None


def test_forbidden_fatbins_by_kernel_name_cached_per_library_patterns_and_gpu(library, tmp_path, monkeypatch):
    """The grader's half with the driver replaced by a stand-in that names each fatbin's
    kernels by its fill byte: the second fatbin holds the forbidden kernel."""
    names = {0xA1: ["_Z6matmulv"], 0xB2: ["_ZN13pytorch_flash9flash_bwdEv", "_Z6helperv"], 0xC3: ["_Z7softmaxv"]}
    asked = []

    def kernel_names(image):
        asked.append(len(image))
        return names[image[16]]

    monkeypatch.setattr(fatbin_scan, "kernel_names", kernel_names)
    found = fatbin_scan.forbidden_fatbins(str(library), (r"pytorch_flash",), tmp_path, gpu="sm_90")
    assert found["spans"] == [[56, 29]] and found["kernels"] == 1 and len(asked) == 3
    again = fatbin_scan.forbidden_fatbins(str(library), (r"pytorch_flash",), tmp_path, gpu="sm_90")
    assert again == found and len(asked) == 3  # from the cache: the driver was not asked again
    fatbin_scan.forbidden_fatbins(str(library), (r"pytorch_flash",), tmp_path, gpu="sm_80")
    assert len(asked) == 6  # another GPU may load other fatbins: not the same answer
    none = fatbin_scan.forbidden_fatbins(str(library), (r"fmha_cutlass",), tmp_path, gpu="sm_90")
    assert none["spans"] == [] and none["kernels"] == 0

