"""grader/nvml.py reads the driver's bytes per process as NVML lays them out: it asks again
with room for every process when the first buffer was too small, skips processes whose
memory NVML cannot report, and reads a process's peak only where accounting keeps one.
The library is faked at the C boundary: each call fills its ctypes arguments as NVML does."""

import ctypes

from pytest_nodus.grader import nvml

NOT_AVAILABLE = nvml.VALUE_NOT_AVAILABLE


class FakeLibrary:
    def __init__(self, processes, accounting=False, peaks=None):
        self.processes, self.accounting, self.peaks, self.asked = processes, accounting, peaks or {}, []

    def nvmlDeviceGetComputeRunningProcesses_v3(self, handle, count, infos):
        room = count._obj.value
        self.asked.append(room)
        count._obj.value = len(self.processes)
        if room < len(self.processes):
            return nvml.ERROR_INSUFFICIENT_SIZE
        for i, (pid, used) in enumerate(self.processes):
            infos[i].pid, infos[i].usedGpuMemory = pid, used
        return nvml.SUCCESS

    def nvmlDeviceGetAccountingMode(self, handle, mode):
        mode._obj.value = nvml.FEATURE_ENABLED if self.accounting else 0
        return nvml.SUCCESS

    def nvmlDeviceGetAccountingStats(self, handle, pid, stats):
        if not self.accounting or pid.value not in self.peaks:
            return nvml.ERROR_NOT_FOUND
        stats._obj.maxMemoryUsage = self.peaks[pid.value]
        return nvml.SUCCESS


def test_every_process_is_read_even_past_the_first_buffer():
    processes = [(1000 + i, i << 20) for i in range(100)]  # more than the first buffer's 64
    library = FakeLibrary(processes)
    used = nvml.Device(library, ctypes.c_void_p()).used_bytes()
    assert used == dict(processes) and library.asked == [64, 100]


def test_a_process_whose_memory_nvml_cannot_report_is_left_out():
    library = FakeLibrary([(7, 5 << 30), (8, NOT_AVAILABLE)])
    assert nvml.Device(library, ctypes.c_void_p()).used_bytes() == {7: 5 << 30}


def test_a_peak_is_read_only_where_accounting_keeps_one():
    off = nvml.Device(FakeLibrary([], accounting=False, peaks={7: 9 << 30}), ctypes.c_void_p())
    assert not off.accounting_on() and off.peak_bytes(7) is None
    on = nvml.Device(FakeLibrary([], accounting=True, peaks={7: 9 << 30}), ctypes.c_void_p())
    assert on.accounting_on() and on.peak_bytes(7) == 9 << 30 and on.peak_bytes(8) is None


def test_no_driver_no_device(monkeypatch):
    monkeypatch.setattr(nvml, "_library", lambda: None)
    assert nvml.open_device("GPU-00000000-0000-0000-0000-000000000000") is None
