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
- **It closes** after the interprocess event ``done``, which the harness records right
  after copying the outputs into the receipts, with the grader's *snapshot* of the
  receipts, then the end event. The snapshot is what gets verified. A ``done`` recorded
  early only makes the snapshot read poison or unfinished outputs; outputs that are right
  in the snapshot were finished before the window closed.

The window also holds the fixed cost of the copies, the flush and the spin's tail. That
cost is the same for expert and submission at a size, so the grader measures it on the
expert (window minus the expert's own event time, which is trusted) and subtracts it
(:mod:`pytest_nodus.timing`).

On the CPU the window is the CPU time the sandbox process spent between ``go`` and its
report, read by the grader from the process's CPU-time clock (the kernel's own accounting,
in ns, which nothing in the sandbox can rewrite), each end read while the sandbox is
blocked on its pipe: Linux brings a running task's count up to date only when it is
switched out or at a tick, so a reading taken while it runs can miss the whole call. The host's wall clock around
a pipe round trip was too noisy for CPU-sized calls: 0.2-0.8 ms windows around 0.1-0.3 ms
calls on this project's 2-core CI machine. CPU time sums the process's threads: the
sandbox runs torch with one intra-op thread (``OMP_NUM_THREADS=1``), so an honest call's CPU
time is at most its wall time.

CUDA's interprocess events are waited on as "the latest record when the wait is enqueued".
So the grader enqueues its wait on ``done`` only once the sandbox says it has recorded it
(the ``enqueued`` reply), and the spin is long enough that this normally happens before the
GPU gets there; a slow host only makes a window longer, never shorter.
"""

from __future__ import annotations

import time

import torch

from pytest_nodus.correctness import poison_

# ~1 ms at the H200's ~2 GHz boost clock: room for the pipe round trips and the call's
# host-side launches (run 9 in docs/h200/NOTES.md measured a torch.compile call's host overhead).
SPIN_CYCLES = 2_000_000


class GraderClock:
    """One per sandbox: its stream, its interprocess events, its flush buffer."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"
        self._t_open = self._t_close = None
        self.pid: int | None = None  # the sandbox's, set once it runs (the CPU clock reads it)
        if self.cuda:
            self.stream = torch.cuda.Stream(device)
            self.go = torch.cuda.Event(interprocess=True)
            self.done = torch.cuda.Event(interprocess=True)
            self.opened = torch.cuda.Event(enable_timing=True)
            self.closed = torch.cuda.Event(enable_timing=True)
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
            self.flush_buffer = torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device=device)
            with torch.cuda.device(device):
                # Record once so both events exist before their handles are exported.
                self.go.record(self.stream)
                self.done.record(self.stream)
            self.stream.synchronize()

    def handles(self) -> dict | None:
        """What the sandbox needs to open the same events (before it is confined)."""
        if not self.cuda:
            return None
        return {"go": bytes(self.go.ipc_handle()), "done": bytes(self.done.ipc_handle())}

    def open(self, copies: list[tuple[torch.Tensor, torch.Tensor]], receipts: list[torch.Tensor]) -> None:
        """Start the window, then write the call's inputs (``(arena view, pristine)``) and poison receipts."""
        if not self.cuda:
            for view, pristine in copies:
                view.copy_(pristine)
            for receipt in receipts:
                poison_(receipt)
            self._t_open = self._idle_cpu_ns()
            return
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

    def close(self, receipts: list[torch.Tensor]) -> list[torch.Tensor]:
        """End the window once the sandbox has recorded ``done``; returns the grader's snapshot."""
        if not self.cuda:
            return [r.clone() for r in receipts]
        with torch.cuda.stream(self.stream):
            self.stream.wait_event(self.done)
            snapshot = [r.clone() for r in receipts]
            self.closed.record(self.stream)
        return snapshot

    def elapsed_ms(self, timeout_s: float) -> float | None:
        """The window's length, or None if it did not close within ``timeout_s`` (a ``done``
        that never fires: the stream is left behind with its sandbox)."""
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
        """The sandbox's CPU time, read once its main thread is asleep (on its pipe)."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            try:
                with open(f"/proc/{self.pid}/stat") as stat:
                    state = stat.read().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError, TypeError):
                return None
            if state != "R":
                break
            time.sleep(20e-6)
        # Linux's clockid for a process's CPU time: MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        # (include/linux/posix-timers.h).
        try:
            return time.clock_gettime_ns(((~self.pid) << 3) | 2)
        except (OSError, TypeError):
            return None
