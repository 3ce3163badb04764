"""What the sandbox does for each request (``shared/protocol.py`` names them).

``CALL``
    arm one call of the kernel on inputs the grader will place in the arena, every call the
    same procedure, so checked and timed calls cannot be told apart: build the arguments,
    scrub free memory with NaN, synchronise, answer ``ARMED``.
``GO``
    the call itself, inside the grader's window (``grader/clock.py``): the current stream
    waits for the grader's ``go`` event (the inputs are in place once it fires), CUDA events
    time the call; on the current stream, each output's place in the heap (outputs outside
    it are copied into the receipts) and then the call's number are written into the
    grader's words (the flag closes the grader's window on the GPU), and the return is
    marked (``t_stream``); then a device-wide synchronise (work left on any stream shows in
    ``t_call``), and ``ENQUEUED`` goes back. Then the report: times and tripwire flags.
    A trusted file (a context baseline) may define ``prepare(*args)``: it runs while the
    call is armed, before the scrub, and its result is what ``kernel`` is called with. A
    submission's ``prepare`` is never called.
``FINISH``
    check that the last outputs did not change after their call returned, and report the
    kernel audit.

Everything this process says is a claim. The grader verifies outputs itself (in its own
snapshot of the receipts), times each call on its own clock, and decides the grade.
"""

from __future__ import annotations

import contextlib
import time

import torch

from pytest_nodus.sandbox import guard, outputs, tracebacks
from pytest_nodus.sandbox.audit import KernelAudit
from pytest_nodus.shared import protocol
from pytest_nodus.shared.arena import arena_view
from pytest_nodus.shared.bits import same_bits

# Captured before any submission code runs (guard.Integrity watches this module's globals).
# On the CPU a call's time is this process's CPU time, all its threads summed: what the
# grader's CPU clock counts too (a kernel that splits its rows over threads and joins them
# claims what the clock sees), and steady when other processes compete for the cores, as
# wall time is not.
_process_time_ns = time.process_time_ns
_cuda_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_event_sync = torch.cuda.Event.synchronize

KERNEL_MODULE = protocol.KERNEL_MODULE  # the name the kernel file is imported under


class Harness:
    def __init__(self, device: torch.device, kernel, arena: torch.Tensor, audit: bool, integrity: guard.Integrity,
                 tripwire=None, prepare=None, clock=None, heap=None, send=None, receive=None):
        self.device = device
        self.kernel = kernel
        self.prepare = prepare
        self.arena = arena
        self.integrity = integrity  # snapshot taken before the kernel file was imported
        self.tripwire = tripwire
        self.returned = None  # (outputs, their state at return) of the last call, for the late-write check
        self.input_spans: list[tuple[int, int]] = []  # the armed call's input bytes
        self.armed = None  # (args, receipts, expected, flags) between CALL and GO
        self.clock = clock  # (go word, flag word, output words, stream memory ops) of the grader's clock
        # One view per output word, cut once: slicing in ``go`` would be host time in the call.
        self.output_words = [] if clock is None else [clock[2][i:i + 1] for i in range(clock[2].numel())]
        self.heap = heap  # sandbox.heap.OutputHeap on the GPU
        self.send = send  # for the ENQUEUED reply, ahead of the report
        self.receive = receive  # the grader's ACK (CPU), between ENQUEUED and the report
        self.audit = KernelAudit(audit, device)
        if device.type == "cuda":
            self.events = [_Event(enable_timing=True) for _ in range(3)]

    def handlers(self) -> dict:
        return {protocol.CALL: self.call, protocol.GO: self.go, protocol.FINISH: self.finish, protocol.WARM: self.warm}

    # -- requests -----------------------------------------------------------------
    def finish(self, message):
        flags = self._late_write_flags() + self._escape_flags()
        audit = self.audit.restart() if message.get("audit", True) else None
        if self.device.type == "cuda":
            if self.heap is not None:
                # The size is done: its pools' cached segments go back to the heap (sandbox.heap);
                # the renewal empties torch's cache itself.
                self.heap.renew()
            else:
                torch.cuda.empty_cache()
        return {"ok": True, "flags": flags, "audit": audit}

    def warm(self, message):
        """The kernel once on the arena's inputs, untimed, its outputs dropped: where its
        compiles, tuning and graph builds for these shapes happen, beside the other roles'."""
        self.armed = None
        self._next_call()
        layout = message["layout"]
        inputs = {name: arena_view(self.arena, *where) for name, where in layout["inputs"].items()}
        args = [inputs[name] if name in inputs else message["scalars"][name] for name in message["order"]]
        try:
            if self.prepare is not None:
                args = self.prepare(*args)
            with self._allocating():
                result = self.kernel(*args)
            if self.device.type == "cuda":
                _cuda_synchronize()
        except BaseException as exc:  # noqa: BLE001  the verified call that follows reports it
            return {"ok": False, "error": tracebacks.describe(exc)}
        del result
        return {"ok": True}

    def call(self, message):
        """Arm: everything before the clock, so that GO is only the call."""
        self.armed = None
        flags = self._late_write_flags()
        self._next_call()
        layout = message["layout"]
        inputs = {name: arena_view(self.arena, *where) for name, where in layout["inputs"].items()}
        receipts = [arena_view(self.arena, *where) for where in layout["receipts"]]
        expected = [(tuple(r.shape), r.dtype) for r in receipts]
        args = [inputs[name] if name in inputs else message["scalars"][name] for name in message["order"]]
        if self.prepare is not None:
            try:
                args = self.prepare(*args)
            except BaseException as exc:  # noqa: BLE001
                return {"ok": False, "error": tracebacks.describe(exc), "flags": flags}
        with self._allocating():
            guard.poison_free_memory(expected, self.device)
        if self.device.type == "cuda":
            _cuda_synchronize()
        self.input_spans = [(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in inputs.values()]
        self.armed = (args, receipts, expected, flags)
        return {"ok": True, "stage": protocol.ARMED}

    def go(self, message):
        if self.armed is None:
            return {"ok": False, protocol.HARNESS_ERROR: "go without an armed call"}
        args, receipts, expected, flags = self.armed
        self.armed = None
        cuda = self.device.type == "cuda"
        if cuda:
            go, flag, _, memory_ops = self.clock
            stream = torch.cuda.current_stream()
            memory_ops.wait_geq(stream, go, int(message["call"]))  # the inputs exist from here on
            start, returned_at, synced = self.events
            _event_record(start)
        t0 = _process_time_ns()
        try:
            with self._allocating():
                result = self.kernel(*args)
        except BaseException as exc:  # SystemExit, pytest outcomes, KeyboardInterrupt: all failures
            flags += self._escape_flags()
            return {"ok": False, "error": tracebacks.describe(exc), "flags": flags}
        if cuda:
            # Straight after the call, on its stream: where each output starts, then the flag.
            # What the grader snapshots then is the state at return (work left on other
            # streams is not in it).
            for i, offset in enumerate(outputs.places(result, expected, receipts, self.device, self.arena, self.heap)):
                memory_ops.write64(stream, self.output_words[i], offset)
            memory_ops.write(stream, flag, int(message["call"]))
            # The return is marked only now, so that t_call - t_stream holds none of this
            # harness's host time: only the GPU's leftover work (side streams, late launches)
            # and the synchronise's own latency. Marked before the words, a call whose GPU
            # work ended before its host returned would show this Python as pending work,
            # which an expert whose GPU is still busy at return never shows. The grader's
            # window ends at the flag either way, so the two clocks still agree.
            _event_record(returned_at)
            # Drain the device before any more harness work: the report and output checks
            # would otherwise read as pending work whenever the host is loaded. The grader's
            # snapshot does not wait for this: it was queued behind the flag.
            _cuda_synchronize()  # device-wide: side streams and deferred launches finish here
            _event_record(synced)
        t1 = _process_time_ns()
        if cuda:
            self.send({"ok": True, "stage": protocol.ENQUEUED})
        else:
            # Where the outputs are, for the grader to read them out of this process; then
            # wait (off the clock from the moment the grader has read them) for its ACK.
            where = outputs.places(result, expected, receipts, self.device, self.arena, self.heap)
            self.send({"ok": True, "stage": protocol.ENQUEUED, "outputs": where})
            if self.receive().get("op") != protocol.ACK:
                return {"ok": False, protocol.HARNESS_ERROR: "expected the grader's ack"}
        returned, output_flags = outputs.normalise(result, expected, self.device, self.input_spans)
        if cuda:
            _event_sync(synced)
        if returned is not None:
            # Kept (so the heap does not hand their memory out again) with their state now,
            # for the late-write check at the next request.
            self.returned = (returned, [o.clone() for o in returned])
            if cuda:
                # Nothing of the harness's own still runs on the GPU once it has replied: the
                # grader's idle probe after a frozen call counts such work as the kernel's.
                _cuda_synchronize()
        flags += output_flags
        flags += [{"code": "grader_tampering", "detail": v} for v in self.integrity.violations()]
        flags += self._escape_flags()
        reply = {"ok": True, "flags": flags}
        if cuda:
            reply["t_stream_ms"] = _event_elapsed(start, returned_at)
            reply["t_call_ms"] = _event_elapsed(start, synced)
        else:
            reply["t_stream_ms"] = reply["t_call_ms"] = (t1 - t0) / 1e6
        return reply

    # -- checks ---------------------------------------------------------------------
    def _next_call(self):
        """The heap's routes for the call about to be armed (sandbox.heap)."""
        if self.heap is not None:
            self.heap.next_call()

    def _allocating(self):
        """The call's allocations: from the arena's heap on the GPU (sandbox.heap)."""
        return self.heap.allocating() if self.heap is not None else contextlib.nullcontext()

    def _escape_flags(self):
        attempts = self.tripwire.drain() if self.tripwire is not None else []
        return [{"code": "sandbox_escape", "detail": f"tried to reach outside the sandbox: {', '.join(attempts[:3])}"}] \
            if attempts else []

    def _late_write_flags(self):
        """Outputs that changed after their call returned were written by work nobody timed."""
        if self.returned is None:
            return []
        returned, states = self.returned
        self.returned = None
        if self.device.type == "cuda":
            _cuda_synchronize()
        changed = [i for i, (out, state) in enumerate(zip(returned, states)) if not same_bits(out, state)]
        if changed:
            return [{"code": "output_changed_after_return", "detail": f"output(s) {changed} changed after the call returned"}]
        return []

