"""A submission's sandbox is held to its GPU memory budget by the driver's count of its
processes, read by the grader (grader/gpu_memory_wall.py), and stopped past it as over_limit.
NVML is faked: the count per pid is what the driver would report."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_nodus.grader import gpu_memory_wall
from pytest_nodus.grader.gpu_ledger import GIB
from pytest_nodus.grader.gpu_memory_wall import ALLOWANCE_BYTES, GpuMemoryWall
from pytest_nodus.grader.sandbox_process import Sandbox, SandboxFailure

SANDBOX, CHILD, ESCAPED, NEIGHBOUR = 4_000_001, 4_000_002, 4_000_003, 4_000_004


class FakeDevice:
    """What NVML reports: bytes per pid now, and peaks where accounting is on."""

    def __init__(self, used: dict, peaks: dict | None = None):
        self.used, self.peaks, self.reads = dict(used), peaks, 0

    def used_bytes(self):
        self.reads += 1
        return dict(self.used)

    def accounting_on(self):
        return self.peaks is not None

    def peak_bytes(self, pid):
        return None if self.peaks is None else self.peaks.get(pid)


@pytest.fixture(autouse=True)
def tree(monkeypatch):
    """The sandbox's process tree: CHILD is a process it started."""
    monkeypatch.setattr(gpu_memory_wall, "descendants", lambda pid: {CHILD} if pid == SANDBOX else set())


def test_memory_within_the_budget_and_allowance_passes():
    device = FakeDevice({SANDBOX: GIB // 2, NEIGHBOUR: 70 * GIB})
    wall = GpuMemoryWall(device, 2 * GIB, SANDBOX)
    device.used[SANDBOX] += 2 * GIB + ALLOWANCE_BYTES  # exactly at the limit
    assert wall.breached() is None


def test_memory_past_the_limit_stops_the_sandbox_and_says_how_much():
    device = FakeDevice({SANDBOX: GIB // 2})
    wall = GpuMemoryWall(device, 2 * GIB, SANDBOX)
    device.used[SANDBOX] = GIB // 2 + 2 * GIB + ALLOWANCE_BYTES + 1
    breach = wall.breached()
    assert breach is not None and "3.50 GiB" in breach and "3.00 GiB" in breach


def test_every_process_of_the_sandbox_counts_and_no_other():
    device = FakeDevice({SANDBOX: GIB // 2, NEIGHBOUR: 70 * GIB})
    wall = GpuMemoryWall(device, 2 * GIB, SANDBOX, cgroup_tasks=lambda: [SANDBOX, ESCAPED])
    device.used[CHILD] = 2 * GIB  # a process it started, in its tree
    assert wall.breached() is None
    device.used[ESCAPED] = 2 * GIB  # one that left its tree, still in its cgroup
    assert wall.breached() is not None


def test_the_drivers_peak_is_read_where_the_host_keeps_accounting():
    device = FakeDevice({SANDBOX: GIB // 2}, peaks={SANDBOX: GIB // 2})
    wall = GpuMemoryWall(device, 2 * GIB, SANDBOX)
    device.peaks[SANDBOX] = 6 * GIB  # taken and freed between two readings: now back to half a GiB
    assert wall.breached() is not None


def test_what_it_keeps_at_rest_after_a_call_stops_it_before_anything_else_runs():
    from pytest_nodus.grader.grading import Grader
    from pytest_nodus.grader.results import SizeResult

    sandbox, killed = _sandbox()
    rested = []
    sandbox.rest = lambda: rested.append(1)
    device = FakeDevice({SANDBOX: GIB // 2})
    sandbox.gpu_wall = GpuMemoryWall(device, 2 * GIB, SANDBOX)
    result = SizeResult(id="public-0", kind="public", rerun=0, dims={})
    device.used[SANDBOX] = GIB // 2 + GIB  # within: rests, and the size records what it held
    Grader._rest(None, sandbox, result, timed=False)
    assert result.gpu_held_gib == 1.0 and not killed
    device.used[SANDBOX] = 6 * GIB  # kept past the call: read at rest, before another sandbox runs
    with pytest.raises(SandboxFailure) as failure:
        Grader._rest(None, sandbox, result, timed=False)
    assert failure.value.code == "over_limit" and killed and len(rested) == 2


def _sandbox():
    """A Sandbox whose process is faked: alive, and recording its kill."""
    killed = []
    sandbox = Sandbox(Path("kernel.py"), "submission", "cuda:0")
    sandbox._spawned = SimpleNamespace(process=SimpleNamespace(poll=lambda: None), kill=lambda: killed.append(1))
    return sandbox, killed


def test_a_call_past_the_budget_ends_in_over_limit_and_the_sandbox_killed():
    from multiprocessing import Pipe

    replies, _silent = Pipe(duplex=False)  # the call never answers
    sandbox, killed = _sandbox()
    sandbox._replies = replies
    device = FakeDevice({SANDBOX: GIB // 2})
    sandbox.gpu_wall = GpuMemoryWall(device, 2 * GIB, SANDBOX)
    device.used[SANDBOX] = 8 * GIB
    with pytest.raises(SandboxFailure) as failure:
        sandbox.receive(timeout_s=5, during="a call")
    assert (failure.value.status, failure.value.code) == ("error", "over_limit") and killed


def test_the_most_held_past_the_start_is_kept_for_the_grade():
    device = FakeDevice({SANDBOX: GIB // 2})
    wall = GpuMemoryWall(device, 2 * GIB, SANDBOX)
    device.used[SANDBOX] = GIB // 2 + GIB
    wall.breached()
    device.used[SANDBOX] = GIB // 2
    wall.breached()
    assert wall.most_bytes == GIB


def test_a_reading_nvml_fails_is_skipped_and_no_wall_stands_where_none_can_be_read(monkeypatch):
    import torch

    from pytest_nodus.grader import nvml

    device = FakeDevice({SANDBOX: GIB // 2})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: SimpleNamespace(uuid="0000"))
    monkeypatch.setattr(nvml, "open_device", lambda uuid: device)
    wall = GpuMemoryWall.raise_for("cuda:0", 2 * GIB, SANDBOX)
    assert wall is not None and GpuMemoryWall.raise_for("cpu", 2 * GIB, SANDBOX) is None

    def failing():
        raise OSError("nvmlDeviceGetComputeRunningProcesses: error 999")
    device.used_bytes = failing
    assert wall.breached() is None  # skipped: the next reading decides
    assert GpuMemoryWall.raise_for("cuda:0", 2 * GIB, SANDBOX) is None  # no first reading: no wall


def test_no_wall_stands_where_nvml_does_not_name_the_sandbox(monkeypatch):
    import torch

    from pytest_nodus.grader import nvml

    # The driver's pids are not the grader's (a container's view): the sandbox, which holds a
    # device context by now, is missing from NVML's list, and would read as holding nothing.
    device = FakeDevice({NEIGHBOUR: GIB // 2})
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: SimpleNamespace(uuid="0000"))
    monkeypatch.setattr(nvml, "open_device", lambda uuid: device)
    assert GpuMemoryWall.raise_for("cuda:0", 2 * GIB, SANDBOX) is None
    device.used[SANDBOX] = GIB // 2
    assert GpuMemoryWall.raise_for("cuda:0", 2 * GIB, SANDBOX) is not None
