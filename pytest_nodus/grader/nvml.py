"""The driver's own count of each process's GPU memory, read by the grader through NVML.

A sandbox allocates on the GPU through the same driver as the grader, and the driver charges
every allocation to the process that made it (its context, torch's cached blocks, raw
``cudaMalloc``), whatever the process does to its own allocator or its own reports. NVML
reads that charge from outside the process: what a sandbox cannot rewrite. Where the driver
keeps accounting (``accounting_on``), it also holds each process's peak, so memory taken and
freed between two readings is still seen.

Bound with ctypes to ``libnvidia-ml.so.1``, which ships with the driver: no Python package to
install, and absent on a host without an NVIDIA driver (:func:`open_device` answers None).
Runs only in the grader.
"""

from __future__ import annotations

import ctypes
import threading
from dataclasses import dataclass

SUCCESS = 0
ERROR_INSUFFICIENT_SIZE = 7
ERROR_NOT_FOUND = 6
FEATURE_ENABLED = 1
# NVML's value for "not available" in a process's used memory (under some virtualisations).
VALUE_NOT_AVAILABLE = 0xFFFFFFFFFFFFFFFF


class _ProcessInfo(ctypes.Structure):
    # nvmlProcessInfo_t as the _v2 and _v3 calls fill it (nvml.h, driver 510 on).
    _fields_ = [("pid", ctypes.c_uint), ("usedGpuMemory", ctypes.c_ulonglong),
                ("gpuInstanceId", ctypes.c_uint), ("computeInstanceId", ctypes.c_uint)]


class _AccountingStats(ctypes.Structure):
    # nvmlAccountingStats_t (nvml.h): maxMemoryUsage is the process's peak, in bytes.
    _fields_ = [("gpuUtilization", ctypes.c_uint), ("memoryUtilization", ctypes.c_uint),
                ("maxMemoryUsage", ctypes.c_ulonglong), ("time", ctypes.c_ulonglong),
                ("startTime", ctypes.c_ulonglong), ("isRunning", ctypes.c_uint),
                ("reserved", ctypes.c_uint * 5)]


_lock = threading.Lock()
_lib = None


def _library():
    """NVML loaded and initialised once per process, or None where it cannot be."""
    global _lib
    with _lock:
        if _lib is None:
            try:
                lib = ctypes.CDLL("libnvidia-ml.so.1")
                _lib = lib if lib.nvmlInit_v2() == SUCCESS else False
            except OSError:
                _lib = False
        return _lib or None


@dataclass
class Device:
    """One GPU as NVML names it."""

    lib: object
    handle: ctypes.c_void_p

    def used_bytes(self) -> dict[int, int]:
        """Bytes the driver charges to each process holding a compute context on the GPU, by
        pid as this process's pid namespace sees it."""
        get = getattr(self.lib, "nvmlDeviceGetComputeRunningProcesses_v3", None) or \
            self.lib.nvmlDeviceGetComputeRunningProcesses_v2
        count = ctypes.c_uint(64)
        while True:
            infos = (_ProcessInfo * count.value)()
            asked = count.value
            rc = get(self.handle, ctypes.byref(count), infos)
            if rc == SUCCESS:
                return {infos[i].pid: infos[i].usedGpuMemory for i in range(count.value)
                        if infos[i].usedGpuMemory != VALUE_NOT_AVAILABLE}
            if rc != ERROR_INSUFFICIENT_SIZE or count.value <= asked:
                raise OSError(f"nvmlDeviceGetComputeRunningProcesses: error {rc}")

    def accounting_on(self) -> bool:
        """Whether the driver keeps per-process accounting on this GPU. Only read: turning it on
        changes the GPU's settings for every process on the host, an operator's decision."""
        mode = ctypes.c_int(0)
        return (self.lib.nvmlDeviceGetAccountingMode(self.handle, ctypes.byref(mode)) == SUCCESS
                and mode.value == FEATURE_ENABLED)

    def peak_bytes(self, pid: int) -> int | None:
        """The most GPU memory ``pid`` ever held, by the driver's accounting; None where
        accounting is off or holds no record of it."""
        stats = _AccountingStats()
        if self.lib.nvmlDeviceGetAccountingStats(self.handle, ctypes.c_uint(pid), ctypes.byref(stats)) != SUCCESS:
            return None
        return stats.maxMemoryUsage


def open_device(uuid: str) -> Device | None:
    """The GPU whose UUID torch reports (``torch.cuda.get_device_properties(i).uuid``), or None
    where NVML is absent or does not know it."""
    lib = _library()
    if lib is None:
        return None
    name = uuid if uuid.startswith(("GPU-", "MIG-")) else f"GPU-{uuid}"
    handle = ctypes.c_void_p()
    if lib.nvmlDeviceGetHandleByUUID(name.encode(), ctypes.byref(handle)) != SUCCESS:
        return None
    return Device(lib, handle)
