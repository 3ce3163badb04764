"""The sandbox: the only process that ever imports a submission (or an expert kernel).

Started by :mod:`pytest_nodus.isolation` as ``python -m pytest_nodus.sandbox``. It
imports torch (and Triton), initialises the device, takes out the kernels and kernel
templates its environment removes (:mod:`pytest_nodus.fatbin`, :mod:`pytest_nodus.templates`),
confines itself with Landlock, and only then imports the kernel file from its scratch
directory. From then on it answers the grader's requests, one at a time:

``call``
    arm one call of the kernel on inputs the grader will place in the arena (the
    grader-owned memory mapped at start-up), every call the same procedure, so checked and
    timed calls cannot be told apart: build the arguments, scrub free memory with NaN,
    synchronise, answer ``armed``.
``go``
    the call itself, inside the grader's window (:mod:`pytest_nodus.clock`): the current
    stream waits for the grader's ``go`` event (the inputs are in place once it fires),
    CUDA events time the call; on the current stream, each output's place in the heap
    (:mod:`pytest_nodus.heap`; outputs outside it are copied into the receipts) and then
    the call's number are written into the grader's words (the flag closes the grader's
    window on the GPU), and the return is marked (``t_stream``); then a device-wide
    synchronise (work left on any stream shows in ``t_call``), and ``enqueued`` goes back.
    Then the report: times, audit and tripwire flags.
    A trusted file (a context baseline) may define ``prepare(*args)``: it runs while the
    call is armed, before the scrub, and its result is what ``kernel`` is called with. A
    submission's ``prepare`` is never called.
``finish``
    check that the last outputs did not change after their call returned, and report the
    kernel audit: every kernel and op that ran since the last ``finish``, on every stream.
    The profiler runs all the time, across calls (started again right after each audit),
    so audited calls cannot be told from others, and its start-up cost falls on a size's
    first call, a warm-up call. Starting it around each call cost ~0.5 ms per call on the
    H200, inside the timed region.

Everything this process says is a claim. The grader verifies outputs itself (in its own
snapshot of the receipts), times each call on its own clock, and decides the grade.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import sys
import time
import traceback

import torch

from pytest_nodus import fatbin, guard, landlock, templates, transport
from pytest_nodus.correctness import same_bits

# Captured before any submission code runs. On the CPU a call's time is the CPU time of this
# (the main) thread: the unit of the grader's CPU clock (pytest_nodus.clock), and steady when
# other processes compete for the cores, as wall time is not.
_thread_time_ns = time.thread_time_ns
_cuda_synchronize = torch.cuda.synchronize
_Event = torch.cuda.Event
_event_record = torch.cuda.Event.record
_event_elapsed = torch.cuda.Event.elapsed_time
_event_sync = torch.cuda.Event.synchronize
_Tensor = torch.Tensor

MAX_AUDIT_NAMES = 64


def _storage_span(t: torch.Tensor) -> tuple[int, int]:
    storage = t.untyped_storage()
    return storage.data_ptr(), storage.data_ptr() + storage.nbytes()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


class Harness:
    def __init__(self, device: torch.device, role: str, kernel, arena: torch.Tensor, audit: bool,
                 integrity: guard.Integrity, tripwire=None, prepare=None, clock=None, heap=None, send=None,
                 receive=None):
        self.device = device
        self.role = role
        self.kernel = kernel
        self.prepare = prepare
        self.arena = arena
        self.audit_enabled = audit
        self.census = guard.ThreadCensus()
        self.integrity = integrity  # snapshot taken before the kernel file was imported
        self.tripwire = tripwire
        self.returned = None  # (outputs, their state at return) of the last call, for the late-write check
        self.input_spans: list[tuple[int, int]] = []  # the armed call's input bytes
        self.armed = None  # (args, receipts, expected, flags) between ``call`` and ``go``
        self.clock = clock  # (go event, flag word, output words, stream memory ops) of the grader's clock
        # One view per output word, cut once: slicing in ``go`` would be host time in the call.
        self.output_words = [] if clock is None else [clock[2][i:i + 1] for i in range(clock[2].numel())]
        self.heap = heap  # pytest_nodus.heap.OutputHeap on the GPU
        self.send = send  # for the ``enqueued`` reply, ahead of the report
        self.receive = receive  # the grader's ack (CPU), between ``enqueued`` and the report
        self._profiler = self._start_audit()
        if device.type == "cuda":
            self.events = [_Event(enable_timing=True) for _ in range(3)]

    # -- requests -----------------------------------------------------------------
    def finish(self, message):
        flags = self._late_write_flags() + self._escape_flags()
        audit = self._stop_audit(self._profiler)
        if self.device.type == "cuda":
            torch.cuda.empty_cache()
        self._profiler = self._start_audit()
        return {"ok": True, "flags": flags, "audit": audit}

    def call(self, message):
        """Arm: everything before the clock, so that ``go`` is only the call."""
        self.armed = None
        flags = self._late_write_flags()
        layout = message["layout"]
        inputs = {name: transport.arena_view(self.arena, *where) for name, where in layout["inputs"].items()}
        receipts = [transport.arena_view(self.arena, *where) for where in layout["receipts"]]
        expected = [(tuple(r.shape), r.dtype) for r in receipts]
        args = [inputs[name] if name in inputs else message["scalars"][name] for name in message["order"]]
        if self.prepare is not None:
            try:
                args = self.prepare(*args)
            except BaseException as exc:  # noqa: BLE001
                return {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc)[:300], "where": "prepare"},
                        "flags": flags}
        with self._allocating():
            guard.poison_free_memory(expected, self.device)
        if self.device.type == "cuda":
            _cuda_synchronize()
        self.input_spans = [(t.data_ptr(), t.data_ptr() + t.numel() * t.element_size()) for t in inputs.values()]
        self.armed = (args, receipts, expected, flags)
        return {"ok": True, "stage": "armed"}

    def go(self, message):
        if self.armed is None:
            return {"ok": False, "harness_error": "go without an armed call"}
        args, receipts, expected, flags = self.armed
        self.armed = None
        cuda = self.device.type == "cuda"
        self.census.start()
        if cuda:
            go, flag, _, memory_ops = self.clock
            stream = torch.cuda.current_stream()
            stream.wait_event(go)  # the inputs exist from here on
            start, returned_at, synced = self.events
            _event_record(start)
        t0 = _thread_time_ns()
        try:
            with self._allocating():
                result = self.kernel(*args)
        except BaseException as exc:  # SystemExit, pytest outcomes, KeyboardInterrupt: all failures
            flags += self._escape_flags()
            return {"ok": False, "error": {"type": type(exc).__name__, "message": str(exc)[:300],
                                           "where": _submission_frame(exc)}, "flags": flags}
        if cuda:
            # Straight after the call, on its stream: where each output starts, then the flag.
            # What the grader snapshots then is the state at return (work left on other
            # streams is not in it).
            for i, offset in enumerate(self._output_places(result, expected, receipts)):
                memory_ops.write64(stream, self.output_words[i], offset)
            memory_ops.write(stream, flag, int(message["call"]))
            # The return is marked only now, so that t_call - t_stream holds none of this
            # harness's host time: only the GPU's leftover work (side streams, late launches)
            # and the synchronise's own latency. Marked before the words, a call whose GPU
            # work had ended by the time its host returned left the GPU idle while this
            # Python ran, and that time read as pending work, which the expert (cuDNN, its
            # GPU still busy at the return) never showed: the attention solution at hidden-1
            # (0.2 ms) was flagged, over the 0.06 ms slack, in 3 of 3 reruns of H200 run 36,
            # and passed 3/3 after this change (run 39). The grader's clock, whose window
            # ends at the flag, saw that time either way, so the two clocks still agree.
            _event_record(returned_at)
            # Drain the device before any more harness work (the report and output checks
            # inside it read as pending work whenever the host was loaded: run 25). The
            # grader's snapshot does not wait for this: it was queued behind the flag.
            _cuda_synchronize()  # device-wide: side streams and deferred launches finish here
            _event_record(synced)
        t1 = _thread_time_ns()
        if cuda:
            self.send({"ok": True, "stage": "enqueued"})
        else:
            # Where the outputs are, for the grader to read them out of this process; then
            # wait (off the clock from the moment the grader has read them) for its ack.
            self.send({"ok": True, "stage": "enqueued", "outputs": self._output_places(result, expected, receipts)})
            if self.receive().get("op") != "ack":
                return {"ok": False, "harness_error": "expected the grader's ack"}
        outputs, output_flags = self._normalise(result, expected)
        if cuda:
            _event_sync(synced)
        threads = self.census.new_alive()
        if outputs is not None:
            # Kept (so the heap does not hand their memory out again) with their state now,
            # for the late-write check at the next request.
            self.returned = (outputs, [o.clone() for o in outputs])
        flags += output_flags
        if threads:
            flags.append({"code": "background_thread", "detail": f"thread(s) {threads[:3]} still running after the call returned"})
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
    def _allocating(self):
        """The call's allocations: from the arena's heap on the GPU (pytest_nodus.heap)."""
        return self.heap.allocating() if self.heap is not None else contextlib.nullcontext()

    def _output_places(self, result, expected, receipts) -> list:
        """Where the grader reads each output. GPU: its byte offset in the arena, where the
        call wrote it when that is in the heap. CPU: ``[address, bytes]`` in this process.
        Anything else of the contract's shape and device (outside the heap, not contiguous)
        is copied into its receipt first (GPU: the receipt's offset, the copy timed with the
        call; CPU: None). What is not a plain tensor of the contract's shape gets -1 (GPU:
        the grader reads poison) or None (CPU: the receipt holds poison)."""
        cuda = self.device.type == "cuda"
        base = self.arena.data_ptr()
        outs = result if type(result) in (tuple, list) else (result,)
        places = []
        for i, (shape, dtype) in enumerate(expected):
            out = outs[i] if i < len(outs) else None
            if type(out) is not _Tensor or tuple(out.shape) != shape or out.dtype != dtype or out.is_cuda != cuda:
                places.append(-1 if cuda else None)
            elif out.is_contiguous() and not cuda:
                places.append([out.data_ptr(), out.numel() * out.element_size()])
            elif out.is_contiguous() and self.heap.holds(out) and out.data_ptr() % 16 == 0:
                places.append(out.data_ptr() - base)
            else:
                receipts[i].copy_(out)
                places.append(receipts[i].data_ptr() - base if cuda else None)
        return places

    def _normalise(self, result, expected):
        """Exact torch.Tensor outputs of the contract's shape, dtype and device, no aliasing."""
        if len(expected) == 1 and type(result) is not tuple and type(result) is not list:
            result = (result,)
        if type(result) not in (tuple, list) or len(result) != len(expected):
            return None, [{"code": "wrong_output",
                           "detail": f"expected {len(expected)} output tensor(s), got {type(result).__name__}"}]
        flags = []
        for i, out in enumerate(result):
            if type(out) is not _Tensor:
                # A subclass or proxy can run work when the checker touches it (lazy outputs).
                code = "tensor_subclass" if isinstance(out, _Tensor) else "wrong_output"
                flags.append({"code": code, "detail": f"output {i} is {type(out).__module__}.{type(out).__qualname__}, not torch.Tensor"})
                continue
            shape, dtype = expected[i]
            if tuple(out.shape) != shape:
                flags.append({"code": "wrong_shape", "detail": f"output {i} has the wrong shape"})
            if out.dtype != dtype:
                flags.append({"code": "wrong_dtype", "detail": f"output {i} is {out.dtype}, expected {dtype}"})
            if out.device.type != self.device.type:
                flags.append({"code": "wrong_device", "detail": f"output {i} is on {out.device}"})
        if flags:
            return None, flags
        # An output whose storage takes in an input's bytes is that input or a view of it.
        spans_in = self.input_spans
        spans_out = [_storage_span(t) for t in result]
        for i, span in enumerate(spans_out):
            if any(_overlaps(span, s) for s in spans_in):
                flags.append({"code": "output_aliases_input", "detail": f"output {i} shares storage with an input"})
            if any(_overlaps(span, s) for s in spans_out[:i]):
                flags.append({"code": "output_aliases_input", "detail": f"output {i} shares storage with another output"})
        return (None, flags) if flags else (list(result), [])

    def _escape_flags(self):
        attempts = self.tripwire.drain() if self.tripwire is not None else []
        return [{"code": "sandbox_escape", "detail": f"tried to reach outside the sandbox: {', '.join(attempts[:3])}"}] \
            if attempts else []

    def _late_write_flags(self):
        """Outputs that changed after their call returned were written by work nobody timed."""
        if self.returned is None:
            return []
        outputs, receipts = self.returned
        self.returned = None
        if self.device.type == "cuda":
            _cuda_synchronize()
        changed = [i for i, (out, receipt) in enumerate(zip(outputs, receipts)) if not same_bits(out, receipt)]
        if changed:
            return [{"code": "output_changed_after_return", "detail": f"output(s) {changed} changed after the call returned"}]
        return []

    # -- kernel audit ---------------------------------------------------------------
    def _start_audit(self):
        if not self.audit_enabled:
            return None
        from torch.profiler import ProfilerActivity, profile

        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if self.device.type == "cuda" else [])
        profiler = profile(activities=activities)
        profiler.__enter__()
        return profiler

    def _stop_audit(self, profiler):
        if profiler is None:
            return None
        profiler.__exit__(None, None, None)
        ops, kernels = set(), {}
        try:
            events = profiler.profiler.kineto_results.events()
        except Exception:  # noqa: BLE001  an audit failure must not look like a kernel failure
            return {"ops": [], "kernels": [], "error": "profiler returned no events"}
        for event in events:
            name = event.name()
            if event.device_type() == torch.autograd.DeviceType.CUDA:
                key = (name[:160], int(event.device_resource_id()))
                kernels[key] = kernels.get(key, 0.0) + event.duration_ns() / 1e3
            else:
                ops.add(name[:160])
        ranked = sorted(kernels.items(), key=lambda kv: -kv[1])[:MAX_AUDIT_NAMES]
        return {"ops": sorted(ops)[:4 * MAX_AUDIT_NAMES],
                "kernels": [{"name": n, "stream": s, "us": round(us, 3)} for (n, s), us in ranked]}


def _submission_frame(exc: BaseException) -> str:
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename.endswith("kernel_under_test.py")]
    return f"line {frames[-1].lineno}" if frames else ""


def _confine(scratch: str, device: torch.device, unreadable_libraries=(), unreadable_paths=()) -> tuple[str, list[str]]:
    """Landlock: read the Python installation and system trees only, less the libraries the
    environment keeps out (and ``unreadable_paths``, files or directories); write scratch
    only. Returns the isolation level and the trees the sandbox may read."""
    import site
    import sysconfig

    here = os.path.dirname(os.path.abspath(__file__))
    read = {"/usr", "/lib", "/lib64", "/bin", "/sbin", "/etc", "/proc", "/sys", "/run", "/dev",
            sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(os.path.realpath(sys.executable)), here}
    read.update(site.getsitepackages())
    read.update(p for p in sysconfig.get_paths().values() if p)
    if site.ENABLE_USER_SITE and site.getusersitepackages():
        read.add(site.getusersitepackages())
    for module in (torch, sys.modules.get("triton"), sys.modules.get("numpy")):
        if module is not None and getattr(module, "__file__", None):
            read.add(os.path.dirname(os.path.dirname(os.path.realpath(module.__file__))))
    devices = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full"]
    if device.type == "cuda":
        devices += [os.path.join("/dev", n) for n in os.listdir("/dev") if n.startswith("nvidia")]
    abi = landlock.restrict(sorted(read), [scratch], devices,
                            landlock.find_libraries(unreadable_libraries) + list(unreadable_paths))
    return (f"landlock-abi{abi}" if abi else "process"), sorted(read | {scratch})


def _load_kernel(path: str, entry_point: str):
    """The entry point and, if the file defines one, its untimed ``prepare``."""
    spec = importlib.util.spec_from_file_location("kernel_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["kernel_under_test"] = module
    spec.loader.exec_module(module)
    kernel = getattr(module, entry_point, None)
    if not callable(kernel):
        raise AttributeError(f"the file defines no callable '{entry_point}'")
    prepare = getattr(module, "prepare", None)
    return kernel, prepare if callable(prepare) else None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pytest_nodus.sandbox")
    parser.add_argument("--requests-fd", type=int, required=True)
    parser.add_argument("--replies-fd", type=int, required=True)
    parser.add_argument("--kernel", required=True)
    parser.add_argument("--entry-point", default="kernel")
    parser.add_argument("--device", required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--role", choices=("submission", "expert", "baseline"), required=True)
    parser.add_argument("--no-audit", action="store_true")
    parser.add_argument("--unreadable-library", action="append", default=[])
    parser.add_argument("--unreadable-package", action="append", default=[])
    parser.add_argument("--removed-templates", action="append", default=[])
    args = parser.parse_args(argv)
    from multiprocessing.connection import Connection

    requests = Connection(args.requests_fd, writable=False)
    replies = Connection(args.replies_fd, readable=False)
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.empty(1, device=device)  # create the context before the device files are locked down
    # Map the grader's arena now: once confined, this process could not import CUDA IPC memory.
    first = transport.recv_request(requests)
    removal_error = None
    removed_fatbins = 0
    if first.get("remove"):
        # Before anything else runs: a removed kernel must never have been loaded.
        try:
            removal = fatbin.overwrite(first["remove"])
            if removal is None:
                removal_error = f"{first['remove']['library']} is not loaded here"
            else:
                removed_fatbins = removal.removed
        except (OSError, ValueError) as exc:
            removal_error = exc  # reported in the hello: the sandbox must not serve
    arena = transport.open_shared(first["arena"])
    clock_parts = output_heap = None
    if device.type == "cuda":
        # The grader's clock: its event opened now for the same reason as the arena, and the
        # driver's stream memory operations loaded while the library path is still readable.
        from pytest_nodus.clock import StreamMemoryOps, flag_word, output_words
        from pytest_nodus.heap import OutputHeap

        clock_parts = (torch.cuda.Event.from_ipc_handle(device, first["clock"]["go"]), flag_word(arena),
                       output_words(arena), StreamMemoryOps())
        where = first["heap"]
        output_heap = OutputHeap(where["library"], arena[where["offset"]:where["offset"] + where["bytes"]], device)
    try:
        import triton  # noqa: F401  imported before confinement: the submission may use it
        import triton.language  # noqa: F401
    except ImportError:
        pass
    if os.environ.get("TRITON_INTERPRET") == "1":
        from pytest_nodus import triton_interpreter

        triton_interpreter.install()
    tripwire = None
    if args.role == "submission":
        unreadable = []
        if args.removed_templates and removal_error is None:
            try:
                unreadable = templates.stub_out(tuple(args.removed_templates))
            except (OSError, RuntimeError) as exc:
                removal_error = exc  # fail closed, as for fatbins: reported in the hello
        unreadable += landlock.find_packages(tuple(args.unreadable_package))
        isolation, readable = _confine(args.scratch, device, tuple(args.unreadable_library), unreadable)
        tripwire = guard.EscapeTripwire(readable)
        # The project root (where expert/ and sealed_fixtures/ live) is unreadable now;
        # drop it from the import path too, so imports from it fail at once and plainly.
        project_root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        sys.path[:] = [p for p in sys.path if p and os.path.abspath(p) != project_root]
        sys.path_importer_cache.clear()
    else:
        isolation = "trusted"
    integrity = guard.Integrity(globals())  # before the submission runs a single line
    try:
        if removal_error is not None:
            raise RuntimeError(f"kernels could not be removed: {removal_error}")
        kernel, prepare = _load_kernel(args.kernel, args.entry_point)
        if args.role == "submission":
            prepare = None  # untimed set-up is for the grader's own files (baselines); a submission's work is all timed
    except BaseException as exc:  # noqa: BLE001  a syntax error is a grade, not a crash
        where = ""
        if isinstance(exc, SyntaxError):
            where = f" (line {exc.lineno})"
        transport.send_reply(replies, {"ok": False, "isolation": isolation,
                                        "error": {"type": type(exc).__name__, "message": f"{str(exc)[:300]}{where}"}})
        return 0
    harness = Harness(device, args.role, kernel, arena, audit=not args.no_audit, integrity=integrity, tripwire=tripwire,
                      prepare=prepare, clock=clock_parts, heap=output_heap,
                      send=lambda reply: transport.send_reply(replies, reply),
                      receive=lambda: transport.recv_request(requests))
    transport.send_reply(replies, {"ok": True, "isolation": isolation, "pid": os.getpid(),
                                    "removed_fatbins": removed_fatbins})
    handlers = {"call": harness.call, "go": harness.go, "finish": harness.finish}
    while True:
        try:
            message = transport.recv_request(requests)
        except EOFError:
            return 0
        if message["op"] == "exit":
            return 0
        try:
            reply = handlers[message["op"]](message)
        except Exception as exc:  # noqa: BLE001  harness failure: report, keep serving
            reply = {"ok": False, "harness_error": f"{type(exc).__name__}: {exc}"[:500]}
        transport.send_reply(replies, reply)


if __name__ == "__main__":
    sys.exit(main())
