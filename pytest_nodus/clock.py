"""The grader's own clock around a sandbox's call: the only time the submission cannot forge.

Everything the sandbox reports is said by a process that runs the submission's code, and
that code can reach the harness (its stack frames, its objects) and rewrite what it says,
times included (``tests/cheats/rmsnorm/forge_reported_time.py`` did). So the grader times
every call itself, as a window whose two ends only the grader can place:

- **It opens** on the grader's own stream: a short GPU spin (so the host can get the call
  enqueued while the GPU waits, and launch latency is not timed as idle GPU), the start
  event, then *the call's inputs are copied into the arena*, the receipts poisoned and L2
  flushed, and the interprocess event ``go`` recorded. No input value exists in memory the
  sandbox can read before the window opens, so no work on them can start before it.
- **It closes** with the grader's *snapshot* of the receipts, then the end event, both
  queued on the grader's stream behind a wait for a flag word in the arena to reach the
  call's number. The harness writes that number from its stream right after copying the
  outputs into the receipts (a CUDA stream memory operation, ``cuStreamWriteValue32``).
  The snapshot is what gets verified. A flag written early only makes the snapshot read
  poison or unfinished outputs; outputs that are right in the snapshot were finished
  before the window closed.

The window also holds the fixed cost of the copies, the flush and the spin's tail. That
cost is the same for expert and submission at a size, so the grader measures it on the
expert (window minus the expert's own event time, which is trusted) and subtracts it
(:mod:`pytest_nodus.timing`).

On the CPU the window is the CPU time the sandbox's main thread spent from ``go`` to its
report: the kernel's own accounting (``/proc/<pid>/task/<pid>/schedstat``, in ns), which
nothing in the sandbox can rewrite, read by the grader while that thread is blocked on its
pipe (Linux brings a running task's count up to date only when it is switched out or at a
tick). The sandbox's claim on the CPU is in the same unit (its main thread's CPU time
around the call), so claim and clock agree whatever else runs on the machine. Two other
clocks failed on the 2-core CI machine under xdist: the wall clock counts scheduling
delays (a correct 1 ms call was seen at 5 ms), and wall-time claims against a CPU-time
clock made the expert's fixed cost swing negative when its calls were descheduled. Work
a CPU kernel moves to another thread is not on this clock (the CPU kernels here run on
the main thread: the Triton interpreter, torch with one intra-op thread).

Why a flag word and not a second interprocess event: a CUDA stream waits on "the event's
latest record when the wait was enqueued", so the grader could only queue its end after
the sandbox said it had recorded, a host round trip late. Whenever the GPU had finished by
then, that round trip was timed: on the H200 (run 16) two correct host-bound styles were
flagged for it. A wait on a value is queued when the window opens, so the window ends on
the GPU the moment the flag is written. The grader can also write the flag itself to free
its own stream when a sandbox dies before writing it.
"""

from __future__ import annotations

import ctypes
import time

import torch

from pytest_nodus.correctness import poison_

# ~1 ms at the H200's ~2 GHz boost clock: room for the pipe round trips and the call's
# host-side launches (run 9 in docs/h200/NOTES.md measured a torch.compile call's host overhead).
SPIN_CYCLES = 2_000_000
FLAG_BYTES = 1024  # the arena's last bytes hold the flag word; inputs and receipts never go there
_WAIT_GEQ = 0  # CU_STREAM_WAIT_VALUE_GEQ (cyclic comparison: the call number may wrap)


class StreamMemoryOps:
    """``cuStreamWaitValue32`` / ``cuStreamWriteValue32`` from the CUDA driver (torch has no
    binding). Loaded by the grader, and by the sandbox before it is confined."""

    def __init__(self):
        driver = ctypes.CDLL("libcuda.so.1")
        self._wait = getattr(driver, "cuStreamWaitValue32_v2", None) or driver.cuStreamWaitValue32
        self._write = getattr(driver, "cuStreamWriteValue32_v2", None) or driver.cuStreamWriteValue32
        for fn in (self._wait, self._write):
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
            fn.restype = ctypes.c_int

    def wait_geq(self, stream: torch.cuda.Stream, word: torch.Tensor, value: int) -> None:
        self._check(self._wait(stream.cuda_stream, word.data_ptr(), value & 0xFFFFFFFF, _WAIT_GEQ), "wait")

    def write(self, stream: torch.cuda.Stream, word: torch.Tensor, value: int) -> None:
        self._check(self._write(stream.cuda_stream, word.data_ptr(), value & 0xFFFFFFFF, 0), "write")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"cuStream{what.title()}Value32 failed with CUresult {status}")


def flag_word(arena: torch.Tensor) -> torch.Tensor:
    """The flag word at the start of the arena's last FLAG_BYTES (same offset on both sides)."""
    return arena[arena.numel() - FLAG_BYTES:][:4].view(torch.int32)


class GraderClock:
    """One per sandbox: its stream, the ``go`` event, the flag word, the flush buffer."""

    def __init__(self, device: torch.device, arena: torch.Tensor):
        self.device = device
        self.cuda = device.type == "cuda"
        self._t_open = None
        self.pid: int | None = None  # the sandbox's, set once it runs (the CPU clock reads it)
        self.call_number = 0
        self._snapshot: list[torch.Tensor] = []
        if self.cuda:
            self.memory_ops = StreamMemoryOps()
            self.flag = flag_word(arena)
            self.flag.zero_()
            self.stream = torch.cuda.Stream(device)
            self.go = torch.cuda.Event(interprocess=True)
            self.opened = torch.cuda.Event(enable_timing=True)
            self.closed = torch.cuda.Event(enable_timing=True)
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
            self.flush_buffer = torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device=device)
            with torch.cuda.device(device):
                self.go.record(self.stream)  # it must exist before its handle is exported
            torch.cuda.synchronize(device)

    def handles(self) -> dict | None:
        """What the sandbox needs to open the same event (before it is confined)."""
        return {"go": bytes(self.go.ipc_handle())} if self.cuda else None

    def open(self, copies: list[tuple[torch.Tensor, torch.Tensor]], receipts: list[torch.Tensor]) -> int:
        """Queue the whole window: start, the call's inputs (``(arena view, pristine)``) and
        poisoned receipts, ``go``; then the wait for the flag, the snapshot and the end.
        Returns the call number the harness must write into the flag."""
        self.call_number += 1
        if not self.cuda:
            for view, pristine in copies:
                view.copy_(pristine)
            for receipt in receipts:
                poison_(receipt)
            self._t_open = self._idle_cpu_ns()
            return self.call_number
        self.stream.wait_stream(torch.cuda.current_stream(self.device))  # the pristine inputs are made there
        with torch.cuda.stream(self.stream):
            torch.cuda._sleep(SPIN_CYCLES)
            self.opened.record(self.stream)
            for view, pristine in copies:
                view.copy_(pristine)
            for receipt in receipts:
                poison_(receipt)
            self.flush_buffer.zero_()  # inputs and receipts come from HBM, as for a cold call
            self.go.record(self.stream)
            self.memory_ops.wait_geq(self.stream, self.flag, self.call_number)
            self._snapshot = [r.clone() for r in receipts]
            self.closed.record(self.stream)
        return self.call_number

    def close(self, receipts: list[torch.Tensor]) -> list[torch.Tensor]:
        """The grader's snapshot of the receipts, taken when the flag was written (on the CPU: now)."""
        if not self.cuda:
            return [r.clone() for r in receipts]
        return self._snapshot

    def release(self) -> None:
        """The call will not write its flag (it failed or hung): write it here, so the
        grader's own stream moves on."""
        if self.cuda:
            self.flag.fill_(self.call_number)

    def elapsed_ms(self, timeout_s: float) -> float | None:
        """The window's length. None on the GPU: the flag was not written within ``timeout_s``
        (then call :meth:`release`); on the CPU: the sandbox's accounting was unreadable."""
        if not self.cuda:  # called after the report: the sandbox is back on its pipe
            t_close = self._idle_cpu_ns()
            if self._t_open is None or t_close is None:
                return None
            return (t_close - self._t_open) / 1e6
        deadline = time.monotonic() + timeout_s
        while not self.closed.query():
            if time.monotonic() > deadline:
                return None
            time.sleep(50e-6)
        return self.opened.elapsed_time(self.closed)

    def _idle_cpu_ns(self, wait_s: float = 0.05) -> int | None:
        """The sandbox main thread's CPU time, read once it is asleep (on its pipe)."""
        task = f"/proc/{self.pid}/task/{self.pid}"
        deadline = time.monotonic() + wait_s
        try:
            while time.monotonic() < deadline:
                with open(f"{task}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] != "R":
                        break
                time.sleep(20e-6)
            with open(f"{task}/schedstat") as schedstat:
                return int(schedstat.read().split()[0])
        except (OSError, IndexError, ValueError):
            return None
