"""GPU memory that crosses a uid boundary: the CUDA driver's virtual memory management.

A CUDA IPC handle (``cudaIpcGetMemHandle``) is imported by reaching into the exporting
process, so the driver refuses it to a process of another uid. A VMM allocation exported
as a POSIX file descriptor is not: the descriptor is the capability, passed at the
sandbox's start (``pass_fds``), and whoever holds it maps the memory. That lets the
submission's sandbox run as a uid of its own (``grader/walls.py``). The grader creates,
exports and maps (``grader/arena_memory.py``); the sandbox imports and maps. torch binds
none of this, so it is called through ctypes on ``libcuda``; the calling thread must hold
the device's primary context (any torch CUDA call makes it current).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

_PINNED = 1  # CU_MEM_ALLOCATION_TYPE_PINNED
_POSIX_FD = 1  # CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
_ON_DEVICE = 1  # CU_MEM_LOCATION_TYPE_DEVICE
_READ_WRITE = 3  # CU_MEM_ACCESS_FLAGS_PROT_READWRITE
_RECOMMENDED = 1  # CU_MEM_ALLOC_GRANULARITY_RECOMMENDED


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _Properties(ctypes.Structure):  # CUmemAllocationProp
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _Access(ctypes.Structure):  # CUmemAccessDesc
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


_driver = None


def _cu():
    global _driver
    if _driver is None:
        _driver = ctypes.CDLL("libcuda.so.1")
    return _driver


_OUT_OF_MEMORY = 2  # CUDA_ERROR_OUT_OF_MEMORY


def _check(status: int, what: str) -> None:
    if status == _OUT_OF_MEMORY:
        # torch's own class: the grader counts it as its own allocation failing
        # (grader_out_of_memory, retryable), as it does torch's allocations, never as the
        # submission's error.
        import torch

        raise torch.OutOfMemoryError(f"{what} failed: the device is out of memory (CUresult {status})")
    if status != 0:
        raise RuntimeError(f"{what} failed with CUresult {status}")


def _properties(device: int) -> _Properties:
    return _Properties(type=_PINNED, requestedHandleTypes=_POSIX_FD, location=_Location(_ON_DEVICE, device))


def granularity(device: int) -> int:
    size = ctypes.c_size_t()
    _check(_cu().cuMemGetAllocationGranularity(ctypes.byref(size), ctypes.byref(_properties(device)), _RECOMMENDED),
           "cuMemGetAllocationGranularity")
    return size.value


@dataclass
class Mapping:
    """One allocation mapped into this process: ``ptr`` for ``nbytes`` on ``device``."""

    handle: int
    ptr: int
    nbytes: int
    device: int

    def tensor(self):
        """The mapping as a uint8 torch tensor (no copy). The mapping is given back when the
        last tensor over it is freed: torch holds the array-interface object for as long as
        the storage lives, and that object's finalizer unmaps. (Work still queued on the
        memory by then is the caller's to have waited for.)"""
        import torch

        return torch.as_tensor(_Owner(self), device=f"cuda:{self.device}")

    def close(self) -> None:
        """Unmap and release (see :meth:`tensor`: called when the last tensor over it goes)."""
        if self.ptr:
            _cu().cuMemUnmap(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.nbytes))
            _cu().cuMemAddressFree(ctypes.c_uint64(self.ptr), ctypes.c_size_t(self.nbytes))
            self.ptr = 0
        if self.handle:
            _cu().cuMemRelease(ctypes.c_uint64(self.handle))
            self.handle = 0


class _Owner:
    """What torch holds for a tensor over a mapping; the mapping goes with it."""

    def __init__(self, mapping: Mapping):
        self.mapping = mapping
        self.__cuda_array_interface__ = {"shape": (mapping.nbytes,), "typestr": "|u1",
                                         "data": (mapping.ptr, False), "version": 3, "strides": None}

    def __del__(self):
        self.mapping.close()


def create(nbytes: int, device: int) -> tuple[Mapping, int]:
    """A fresh allocation of at least ``nbytes``, mapped here, and a file descriptor that
    exports it (the caller passes it on and closes it)."""
    step = granularity(device)
    nbytes = -(-nbytes // step) * step
    handle = ctypes.c_uint64()
    _check(_cu().cuMemCreate(ctypes.byref(handle), ctypes.c_size_t(nbytes), ctypes.byref(_properties(device)),
                             ctypes.c_uint64(0)), "cuMemCreate")
    fd = ctypes.c_int()
    try:
        _check(_cu().cuMemExportToShareableHandle(ctypes.byref(fd), handle, _POSIX_FD, ctypes.c_uint64(0)),
               "cuMemExportToShareableHandle")
        return _map(handle.value, nbytes, device), fd.value
    except BaseException:
        _cu().cuMemRelease(handle)
        raise


def import_fd(fd: int, nbytes: int, device: int) -> Mapping:
    """Map the allocation another process exported as ``fd`` (of ``nbytes``, a whole number of granules)."""
    handle = ctypes.c_uint64()
    _check(_cu().cuMemImportFromShareableHandle(ctypes.byref(handle), ctypes.c_void_p(fd), _POSIX_FD),
           "cuMemImportFromShareableHandle")
    try:
        return _map(handle.value, nbytes, device)
    except BaseException:
        _cu().cuMemRelease(handle)
        raise


def _map(handle: int, nbytes: int, device: int) -> Mapping:
    ptr = ctypes.c_uint64()
    _check(_cu().cuMemAddressReserve(ctypes.byref(ptr), ctypes.c_size_t(nbytes), ctypes.c_size_t(0),
                                     ctypes.c_uint64(0), ctypes.c_uint64(0)), "cuMemAddressReserve")
    try:
        _check(_cu().cuMemMap(ptr, ctypes.c_size_t(nbytes), ctypes.c_size_t(0), ctypes.c_uint64(handle),
                              ctypes.c_uint64(0)), "cuMemMap")
        access = _Access(_Location(_ON_DEVICE, device), _READ_WRITE)
        status = _cu().cuMemSetAccess(ptr, ctypes.c_size_t(nbytes), ctypes.byref(access), ctypes.c_size_t(1))
        if status != 0:
            _cu().cuMemUnmap(ptr, ctypes.c_size_t(nbytes))
            _check(status, "cuMemSetAccess")
    except BaseException:
        _cu().cuMemAddressFree(ptr, ctypes.c_size_t(nbytes))
        raise
    return Mapping(handle, ptr.value, nbytes, device)
