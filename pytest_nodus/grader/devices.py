"""Which device a grade runs on, what that device can physically do, and who may time on it.

With pytest-xdist each worker owns one GPU (worker ``gwN`` takes GPU ``N mod count``), and
a per-GPU file lock makes sure no two timings share a GPU at once even when there are
more workers than GPUs.
"""

from __future__ import annotations

import fcntl
import os
import re
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class DevicePeaks:
    """Datasheet ceilings. Used only for the physical floor, which is generous on purpose."""

    bytes_per_s: float
    flops_per_s: float  # dense bf16 tensor-core rate


# Vendor datasheet figures (SXM parts); shared/GPU.md measures 4.3 TB/s copy and 790 TF/s
# bf16 matmul on the H200, under these ceilings as they must be.
_PEAKS = {
    "H200": DevicePeaks(4.8e12, 989e12),
    "H100": DevicePeaks(3.35e12, 989e12),
    "A100": DevicePeaks(2.0e12, 312e12),
}

# Output writes can finish in L2 (write-back) before they reach HBM, so a small size can
# look up to ~2x faster than HBM allows. Only times under half the datasheet floor are
# physically impossible; that is what gets flagged.
FLOOR_FRACTION = 0.5


@dataclass(frozen=True)
class Device:
    kind: str  # "cuda" or "cpu"
    index: int | None
    name: str
    peaks: DevicePeaks | None

    @property
    def torch_name(self) -> str:
        return f"cuda:{self.index}" if self.kind == "cuda" else "cpu"

    def describe(self) -> str:
        if self.kind == "cpu":
            return f"cpu ({self.name}; Triton interpreter; times are CPU times)"
        return f"cuda:{self.index} ({self.name})"


def worker_index() -> int:
    match = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    return int(match.group(1)) if match else 0


def choose(requested: str) -> Device:
    """``requested`` is "auto", "cpu" or "cuda". Raises ValueError with a one-line reason."""
    import platform

    import torch

    if requested not in ("auto", "cpu", "cuda"):
        raise ValueError(f"--nodus-device must be auto, cpu or cuda, not {requested!r}")
    if requested == "cuda" and not torch.cuda.is_available():
        raise ValueError("--nodus-device=cuda but torch sees no CUDA device")
    if requested == "cpu" or not torch.cuda.is_available():
        return Device("cpu", None, platform.processor() or platform.machine(), None)
    index = worker_index() % torch.cuda.device_count()
    name = torch.cuda.get_device_name(index)
    peaks = next((p for key, p in _PEAKS.items() if key in name), None)
    return Device("cuda", index, name, peaks)


def settle(device) -> None:
    """Wait for the GPU work queued so far on ``device`` (a torch device or its name); nothing
    on the CPU. What the grader times as a phase (the inputs, the reference) or compares (the
    plain against the tensor-core reference) is mostly GPU work queued asynchronously: without
    the wait its time lands in whichever later step first waits on the stream."""
    import torch

    if torch.device(device).type == "cuda":
        torch.cuda.synchronize(device)


# How long a grade waits for another grade's hold on its GPU before it gives up on the size
# (``--nodus-gpu-wait``). A hold lasts one size of one grade, first-call compiles included
# (FlexAttention's cold compile takes ~220 s on the H200); half an hour is several of those.
# Unbounded, one grader blocked inside CUDA while holding the lock stalls every grade on that
# GPU for good.
GPU_WAIT_S = 1800.0


class DeviceBusy(Exception):
    """Another grade held the GPU for longer than this one would wait."""


@contextmanager
def exclusive(device: Device, wait_s: float = GPU_WAIT_S):
    """Hold the device for timing; yields the ms waited for it (other grades on this GPU
    held it). CPU grades are not serialised (their times are CPU times)."""
    if device.kind != "cuda":
        yield 0.0
        return
    import torch

    uuid = str(getattr(torch.cuda.get_device_properties(device.index), "uuid", device.index))
    with hold(Path(tempfile.gettempdir()) / f"pytest-nodus-gpu-{uuid}.lock", wait_s) as waited_ms:
        yield waited_ms


@contextmanager
def hold(path: Path, wait_s: float):
    """An exclusive ``flock`` on ``path``, waited for at most ``wait_s`` (else DeviceBusy,
    naming the holder); yields the ms it waited. The holder writes its pid and time into the
    file: a stalled GPU then says which process holds it."""
    with open(path, "a+") as handle:  # "a+": opening must not wipe the holder's note
        asked = time.monotonic()
        deadline, pause = asked + wait_s, 0.001
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "another grade"
                    raise DeviceBusy(f"waited {wait_s:g} s for {path.name}, held by {holder}") from None
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
        try:
            handle.truncate(0)
            handle.write(f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}")
            handle.flush()
            yield 1e3 * (time.monotonic() - asked)
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
