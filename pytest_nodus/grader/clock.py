"""The grader's own clock around a sandbox's call: the only time the submission cannot forge.

Everything the sandbox reports is said by a process that runs the submission's code, and
that code can reach the harness (its stack frames, its objects) and rewrite what it says,
times included (``tests/cheats/rmsnorm/forge_reported_time.py`` did). So the grader times
every call itself, as a window whose two ends only the grader can place:

- **It opens** on the grader's own stream: at a timed call the idle probe, which the host
  waits for before it lets the sandbox go (grader/gpu_idle.py), and a short GPU spin (so
  the host can get the call enqueued while the GPU waits, and launch latency is not timed
  as idle GPU); then the start event, *the call's inputs are copied into the arena*, the
  receipts poisoned and L2 flushed, and the call's number written into the arena's go
  word, which the sandbox's stream waits for (``cuStreamWaitValue32``). No input value
  exists in memory the sandbox can read before the window opens, so no work on them can
  start before it.
- **It closes** with the grader's *snapshot* of the outputs, then the end event, both
  queued on the grader's stream behind a wait for a flag word in the arena to reach the
  call's number. The harness writes, in its stream's order right after the call, where
  each output starts (one word per output, beside the flag: outputs are allocated in the
  arena's heap, ``sandbox/heap.py``), then the call's number into the flag (CUDA
  stream memory operations, ``cuStreamWriteValue64/32``). The snapshot is a grader kernel
  that reads those words on the GPU and copies the outputs from where they are; it is
  what gets verified. A flag written early only makes the snapshot read poison or
  unfinished outputs; outputs that are right in the snapshot were finished before the
  window closed. Nothing the harness does sits between the call and the flag, so a
  rewritten harness has nothing to leave out.

The window also holds a fixed cost: the copies, the flush and the snapshot (the grader's own
work, timed apart as ``parts_ms``, and the same for every sandbox at a size), the spin's tail
and the two handoffs between the grader's context and the sandbox's (not the same for every
sandbox). The grader measures it on the expert (window minus the expert's own event time,
which is trusted) and subtracts it, or the submission's own where that is smaller
(``grader/timing.py``).

On the CPU the window is the CPU time the sandbox process spent, all threads summed (ended
ones too), from ``go`` until the grader has read the outputs: Linux's per-process CPU
clock, to the nanosecond, which nothing in the sandbox can rewrite. The harness reports
where the outputs are in its memory and then waits for the grader's ack; the grader reads
them out of the sandbox (``process_vm_readv``; it is the sandbox's parent), and only then
reads the clock, so whatever work made the outputs it read is on the clock, whichever
thread did it. The harness's own checks run after the ack, off the clock. The sandbox's
claim on the CPU is CPU time too (the process's, all threads, around the call), so claim and clock
agree whatever else runs on the machine. Two other clocks failed on the 2-core CI machine
under xdist: the wall clock counts scheduling delays (a correct 1 ms call was seen at
5 ms), and wall-time claims against a CPU-time clock made the expert's fixed cost swing
negative when its calls were descheduled. The CPU time of the sandbox's live child
processes is on the clock too (``tests/cheats/rmsnorm/forked_worker.py`` computed in one),
and so is that of the children it reaped during the call (``spawned_per_call.py`` started
one per call and waited for it, so none was alive when the clock read its descendants).

Why a flag word and not a second interprocess event: a CUDA stream waits on "the event's
latest record when the wait was enqueued", so the grader could only queue its end after
the sandbox said it had recorded, a host round trip late. Whenever the GPU had finished by
then, that round trip was timed: correct host-bound kernels were flagged for it on the H200. A wait on a value is queued when the window opens, so the window ends on
the GPU the moment the flag is written. The grader can also write the flag itself to free
its own stream when a sandbox dies before writing it.
"""

from __future__ import annotations

import time

import torch

from pytest_nodus.grader import child_time, process_memory
from pytest_nodus.grader.gpu_idle import IdleProbe
from pytest_nodus.grader.processes import children, descendants, describe_processes
from pytest_nodus.shared.arena import FLAG_BYTES, MAX_OUTPUTS, flag_word, go_word, output_words
from pytest_nodus.shared.bits import poison_
from pytest_nodus.shared.stream_ops import StreamMemoryOps

# ~4 ms at the H200's ~2 GHz boost clock: room for the rest of open()'s enqueueing, the pipe
# round trip and the call's host-side launches, so that a call whose host work outlasts its
# GPU work is still timed as GPU work. A call's launches that land after the GPU has reached
# them are timed as idle GPU: cuDNN's 0.35 ms attention call needs more than 1 ms of cover on
# a slow host (docs/timing.md). The spin is before the window opens: it costs wall time
# only, ~4 ms per timed call.
SPIN_CYCLES = 8_000_000

_gather_kernel = None


def _gather():
    """The snapshot's kernel (built on first GPU use): copy one output, as 32-bit words, from
    the byte offset its word names; poison (all bits set: NaN) when that offset is not a
    16-byte aligned place inside the arena below the flag bytes."""
    global _gather_kernel
    if _gather_kernel is None:
        import triton
        import triton.language as tl

        @triton.jit(do_not_specialize=["slot", "n_words", "limit_bytes"])  # one build for every output
        def gather(arena_words, offsets, slot, out_words, n_words, limit_bytes, BLOCK: tl.constexpr):
            offset = tl.load(offsets + slot)
            ok = (offset >= 0) & (offset % 16 == 0) & (offset + n_words * 4 <= limit_bytes)
            start = tl.multiple_of(tl.where(ok, offset // 4, 0), 4)
            index = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
            inside = index < n_words
            words = tl.load(arena_words + start + index, mask=inside & ok, other=-1)
            tl.store(out_words + index, words, mask=inside)

        _gather_kernel = gather
    return _gather_kernel


class GraderClock:
    """One per sandbox: its stream, the go word, the flag word, the flush buffer."""

    def __init__(self, device: torch.device, arena: torch.Tensor):
        self.device = device
        self.cuda = device.type == "cuda"
        self._t_open = self._t_close = None
        self._helpers_open: dict[int, int] = {}
        # CPU ms of the sandbox's children in the last window (the CPU: live and ended, counted
        # in it; the GPU: ended ones, live ones flagged). A correct kernel has none (checks.py).
        self.helper_ms: float | None = None
        self._ended_open: tuple[int, dict[int, int]] | None = None
        self.opened_boot_ticks = 0  # when the last window opened, in /proc's clock ticks since boot
        self.children_at_open: list[str] = []
        self.places: list = []  # the CPU's, per output: [address, bytes] in the sandbox, or None: read from its receipt
        self._spans: list | None = None  # the GPU snapshot's output_spans, read once per call
        self.pid: int | None = None  # the sandbox's, set once it runs (the CPU clock reads it)
        self.cgroup = None  # the sandbox's cgroup (grader/cgroup.py) where it has one: the CPU clock
        self.call_number, self.probed_window = 0, False  # the last window opened behind the idle probe
        self._snapshot: list[torch.Tensor] = []
        self.arena = arena
        self._outputs: list[tuple[int, torch.dtype, tuple[int, ...]]] = []  # (bytes, dtype, shape) per output
        self._beside = None  # (stream, IdleProbe) of queue_idle_step, made at its first use
        self._beside_queued = False
        if self.cuda:
            self.memory_ops = StreamMemoryOps()
            self.flag = flag_word(arena)
            self.flag.zero_()
            self.output_words = output_words(arena)
            self.output_words.fill_(-1)
            # The words as they stood when the flag came, copied on the grader's stream before
            # the snapshot. Everything the grader reads of them (the snapshot's offsets, the
            # alias and late-write checks) comes from this copy: the sandbox could rewrite the
            # shared words after the flag and show the later checks other bytes.
            self.words_at_flag = torch.full_like(self.output_words[:MAX_OUTPUTS], -1)
            self._arena_words = arena.view(torch.int32)
            self._limit_bytes = arena.numel() - FLAG_BYTES
            self.stream = torch.cuda.Stream(device)
            # The go word, not an interprocess event: the driver refuses an event's IPC import
            # to a sandbox of another uid, a stream-memory wait on shared memory works for any.
            self.go_word = go_word(arena)
            self.go_word.zero_()
            self.opened = torch.cuda.Event(enable_timing=True)
            self.closed = torch.cuda.Event(enable_timing=True)
            self.gone = torch.cuda.Event(enable_timing=True)  # the grader's own work done: go
            self.flagged = torch.cuda.Event(enable_timing=True)  # the flag seen: the snapshot's start
            l2 = getattr(torch.cuda.get_device_properties(device), "L2_cache_size", 64 << 20)
            self.flush_buffer = torch.empty(max(4 * l2, 256 << 20), dtype=torch.uint8, device=device)
            with torch.cuda.device(device):
                self.probe = IdleProbe(device)
                # Build the snapshot kernel now: a build inside a window would be timed.
                self._outputs = [(4, torch.int32, (1,))]
                self._copy_output(0, self._snapshot_buffer(0))
                self._outputs = []
            torch.cuda.synchronize(device)

    def open(self, copies: list[tuple[torch.Tensor, torch.Tensor]], receipts: list[torch.Tensor],
             timed: bool = True) -> int:
        """Queue the whole window: start, the call's inputs (``(arena view, pristine)``) and
        poisoned receipts, ``go``; then the wait for the flag, the snapshot and the end. An
        untimed window (warm-up, fuzzed) skips the idle probe and the spin, which serve only
        its time. Returns the call number the harness must write into the flag."""
        self.call_number += 1
        self.probed_window = timed
        if len(receipts) > MAX_OUTPUTS:
            raise ValueError(f"{len(receipts)} outputs: the flag bytes hold words for {MAX_OUTPUTS}")
        self._outputs = [(r.numel() * r.element_size(), r.dtype, tuple(r.shape)) for r in receipts]
        self._spans = None
        self.helper_ms = None
        kids = children(self.pid) if self.pid is not None else set()  # one /proc walk for both
        self._ended_open, self.opened_boot_ticks = child_time.ended_children(self.pid, kids), child_time.boot_ticks()
        # For a flag's detail: which children a timed call began with, so a flag on children's
        # CPU time says where that time came from.
        self.children_at_open = describe_processes(kids)
        if not self.cuda:
            for view, pristine in copies:
                view.copy_(pristine)
            for receipt in receipts:
                poison_(receipt)
            self._t_open, self._helpers_open = self._cpu_ns(exact=False), self._descendants_cpu_ns()
            self._t_close = None
            return self.call_number
        self.stream.wait_stream(torch.cuda.current_stream(self.device))  # the pristine inputs are made there
        with torch.cuda.stream(self.stream):
            # The snapshot's buffers are allocated before the wait for the flag is queued: an
            # allocation after it that runs out of memory makes the allocator cudaFree its cache,
            # which waits for the whole device, this stream included, whose flag the sandbox
            # writes only after open() returns: a deadlock that holds the GPU lock.
            snapshot = [self._snapshot_buffer(slot) for slot in range(len(receipts))]
            if timed:
                self.probe.run()  # the GPU idle of other contexts? The host waits for it (grader/gpu_idle.py)
                torch.cuda._sleep(SPIN_CYCLES)
            self.opened.record(self.stream)
            for view, pristine in copies:
                view.copy_(pristine)
            for receipt in receipts:
                poison_(receipt)
            self.output_words.fill_(-1)  # a harness that writes no word gets poison
            self.flush_buffer.zero_()  # inputs and receipts come from HBM, as for a cold call
            self.gone.record(self.stream)
            self.memory_ops.write(self.stream, self.go_word, self.call_number)  # the sandbox's stream may start
            self.memory_ops.wait_geq(self.stream, self.flag, self.call_number)
            self.flagged.record(self.stream)
            self.words_at_flag.copy_(self.output_words[:MAX_OUTPUTS])
            self._snapshot = [self._copy_output(slot, words) for slot, words in enumerate(snapshot)]
            self.closed.record(self.stream)
        return self.call_number

    def close(self, receipts: list[torch.Tensor], where=None) -> list[torch.Tensor]:
        """The grader's snapshot of the outputs, taken when the flag was written. On the CPU:
        now, while the sandbox waits for the grader's ack. ``where`` (the CPU) is, per
        output, ``[address, bytes]`` in the sandbox's memory, or None where the harness
        copied it into its receipt. Then the window closes: reading the outputs first means
        any work that made them is already on the CPU clock."""
        if self.cuda:
            self.helper_ms = self._ended_ms()
            return self._snapshot
        self.places = process_memory.valid_places(where, self._outputs)
        self._snapshot = [self._read_output(slot, receipt) for slot, receipt in enumerate(receipts)]
        self._t_close = self._cpu_ns(exact=True)
        helpers = self._descendants_cpu_ns()
        live = sum(t - self._helpers_open.get(pid, 0) for pid, t in helpers.items()) / 1e6
        self.helper_ms = live + (self._ended_ms() or 0.0)
        return self._snapshot

    def _ended_ms(self) -> float | None:
        """CPU time of the sandbox's children that ended since the window opened (ms). A child
        started and waited for inside one call (tests/cheats/rmsnorm/spawned_per_call.py) is
        gone by the time the live descendants are read; the kernel adds its time to the
        parent's, at the resolution of a clock tick (see _ended_between)."""
        now = child_time.ended_children(self.pid)
        if now is None or self._ended_open is None:
            return None
        return child_time.ended_between(self._ended_open, now) / 1e6

    def _read_output(self, slot: int, receipt: torch.Tensor) -> torch.Tensor:
        place = self.places[slot]
        if place is None:
            return receipt.clone()
        nbytes, dtype, shape = self._outputs[slot]
        copy = torch.empty(nbytes, dtype=torch.uint8)
        if not process_memory.read_process_memory(self.pid, place[0], copy.data_ptr(), nbytes):
            copy.fill_(0xFF)  # unreadable: poison (NaN)
        return copy.view(dtype).view(shape)

    def _snapshot_buffer(self, slot: int) -> torch.Tensor:
        return torch.empty(-(-self._outputs[slot][0] // 4), dtype=torch.int32, device=self.device)

    def _copy_output(self, slot: int, words: torch.Tensor) -> torch.Tensor:
        """Queue the gather of output ``slot`` into ``words``; it allocates nothing."""
        nbytes, dtype, shape = self._outputs[slot]
        n_words = words.numel()
        block = 4096
        _gather()[(-(-n_words // block),)](self._arena_words, self.words_at_flag, slot, words, n_words,
                                           self._limit_bytes, BLOCK=block)
        return words.view(torch.uint8)[:nbytes].view(dtype).view(shape)

    def output_spans(self) -> list[tuple[int, int] | None]:
        """Per output (GPU), the arena bytes ``(start, end)`` the snapshot read, None where it
        read none. Read once after the window has closed (one device-to-host copy)."""
        if not self.cuda:
            return []
        if self._spans is None:
            self._spans = self._read_spans()
        return self._spans

    def _read_spans(self) -> list[tuple[int, int] | None]:
        offsets = self.words_at_flag[:len(self._outputs)].tolist()
        spans = []
        for offset, (nbytes, _, _) in zip(offsets, self._outputs):
            n_words = -(-nbytes // 4)
            ok = offset >= 0 and offset % 16 == 0 and offset + 4 * n_words <= self._limit_bytes
            spans.append((offset, offset + nbytes) if ok else None)
        return spans

    def changed_since_close(self) -> list[int]:
        """Outputs whose bytes in the arena now differ from the snapshot: written by work
        that went on after the window closed (the sandbox has reported, so it claims that
        all its work is done)."""
        if not self.cuda:
            return [slot for slot, place in enumerate(self.places)  # bytes: NaN equals itself here
                    if place is not None and not torch.equal(_bytes(self._read_output(slot, None)),
                                                             _bytes(self._snapshot[slot]))]
        torch.cuda.synchronize(self.device)
        changed = []
        for slot, span in enumerate(self.output_spans()):
            if span is None:
                continue
            now = self.arena[span[0]:span[1]]
            if not torch.equal(now, _bytes(self._snapshot[slot])):
                changed.append(slot)
        return changed

    def idle_step_ns(self) -> int:
        """The idle probe run alone, now, on the grader's stream: its step over the limit in
        ns, 0 when the GPU was the grader's alone (grader/gpu_idle.py); 0 on the CPU."""
        if not self.cuda:
            return 0
        with torch.cuda.stream(self.stream):
            self.probe.run()
        self.probe.wait()
        return self.probe.contended_ns()

    def queue_idle_step(self) -> None:
        """Queue the idle probe on a stream of its own, to run beside the grader's own work
        (a call's verification) instead of before it: kernels of one context run side by side
        without the time-slicing the probe detects, so only another context's work shows as a
        step (grader/gpu_idle.py). Read it with :meth:`queued_idle_step_ns`."""
        if not self.cuda:
            return
        if self._beside is None:
            self._beside = (torch.cuda.Stream(self.device), IdleProbe(self.device))
        stream, probe = self._beside
        with torch.cuda.stream(stream):
            probe.run()
        self._beside_queued = True

    def queued_idle_step_ns(self) -> int | None:
        """The queued probe's step over the limit (0: the GPU was the grader's alone while it
        ran), once it has ended; None where none was queued since the last reading."""
        if not self._beside_queued:
            return None
        self._beside_queued = False
        probe = self._beside[1]
        probe.wait()
        return probe.contended_ns()

    def probed(self) -> None:
        """Return once the window's idle probe has ended: only then may the sandbox go."""
        if self.cuda and self.probed_window:
            self.probe.wait()

    def window_contended_ns(self) -> int:  # the last window's probe step; 0 without a probe
        return self.probe.contended_ns() if self.cuda and self.probed_window else 0

    def release(self) -> None:
        """The call will not write its flag (it failed or hung): write it here, so the
        grader's own stream moves on."""
        if self.cuda:
            self.flag.fill_(self.call_number)

    def elapsed_ms(self, timeout_s: float) -> float | None:
        """The window's length. None on the GPU: the flag was not written within ``timeout_s``
        (then call :meth:`release`); on the CPU: the sandbox's accounting was unreadable."""
        if not self.cuda:
            if self._t_open is None or self._t_close is None:
                return None
            children = 0.0 if self.cgroup is not None else (self.helper_ms or 0.0)  # a cgroup's count holds them
            return (self._t_close - self._t_open) / 1e6 + children
        deadline = time.monotonic() + timeout_s
        while not self.closed.query():
            if time.monotonic() > deadline:
                return None
            time.sleep(50e-6)
        return self.opened.elapsed_time(self.closed)

    def parts_ms(self) -> tuple[float, float] | None:
        """After :meth:`elapsed_ms`: the window's grader-only ends, (open to go, flag to close)."""
        if not self.cuda:
            return None
        return self.opened.elapsed_time(self.gone), self.flagged.elapsed_time(self.closed)

    def _descendants_cpu_ns(self) -> dict[int, int]:
        """CPU time of every live descendant process of the sandbox, by pid. (One that ended
        inside the window is not seen; starting a process costs the sandbox more CPU than a
        CPU-sized call, so a worker is forked ahead, and a live one is counted.)"""
        times = {}
        for pid in descendants(self.pid):
            try:
                times[pid] = time.clock_gettime_ns(((~pid) << 3) | 2)
            except OSError:
                continue
        return times

    def _cpu_ns(self, exact: bool) -> int | None:
        """The CPU clock: the cgroup's count where the sandbox has one (everything it started,
        wherever re-parented, ended ones too), else the sandbox process's own. At the window's
        open it need not be exact: a slice not yet counted there only lengthens the window.
        At its close it must be: work left on a core past the outputs' read would be charged
        to nobody."""
        if self.cgroup is not None:
            return self.cgroup.exact_usage_ns() if exact else self.cgroup.usage_ns()
        return self._process_cpu_ns()

    def _process_cpu_ns(self) -> int | None:
        """The sandbox's CPU time, all its threads (live and ended) summed by the kernel, to
        the nanosecond, running ones included (Linux's per-process CPU clock)."""
        try:
            return time.clock_gettime_ns(((~self.pid) << 3) | 2)  # MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)
        except (OSError, TypeError):
            return None


def _bytes(t: torch.Tensor) -> torch.Tensor:
    return t.reshape(-1).view(torch.uint8)
