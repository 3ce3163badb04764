"""``python -m pytest_nodus.sandbox``: start up in a fixed order, then serve the grader.

The process is spawned inside its walls knowing only its role and scratch directory
(``grader/sandbox_spawn.py``): it imports, then waits for its first message (``START``),
which says what it runs, on which device, what is kept out and where its arena is.

The order is the seal: the device context and every grader-owned mapping (the arena, the
heap) first, while the process may still read the driver's files; then the
kernels and templates the environment removes, before anything could have loaded them;
then confinement; and only then the kernel file, from the scratch directory. A kernel file
that fails to load is answered in the hello, as a grade, not a crash.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import socket
import sys
import time
from multiprocessing.connection import Connection

import torch

from pytest_nodus.sandbox import fatbin_removal, guard, harness, outputs, templates, tracebacks
from pytest_nodus.sandbox.confine import confine, forget_project_root, limit_tasks
from pytest_nodus.sandbox.landlock import find_packages
from pytest_nodus.shared import protocol
from pytest_nodus.shared.arena import flag_word, go_word, open_shared, output_words


def _arguments(argv):
    parser = argparse.ArgumentParser(prog="pytest_nodus.sandbox")
    parser.add_argument("--requests-fd", type=int, required=True)
    parser.add_argument("--replies-fd", type=int, required=True)
    parser.add_argument("--descriptors-fd", type=int, required=True)
    parser.add_argument("--scratch", required=True)
    parser.add_argument("--role", choices=("submission", "expert", "baseline"), required=True)
    parser.add_argument("--preload", default="", help="modules a trusted role imports while it waits to start")
    return parser.parse_args(argv)


def _descriptors(descriptors_fd: int, start: dict) -> None:
    """Receive the arena's file descriptors (the GPU arena's memory: ``shared/vmm.py``) and
    put this process's numbers for them into its description; then close the channel."""
    channel = socket.socket(fileno=descriptors_fd)
    try:
        sent = start["descriptors"]
        if sent:
            _, received, _, _ = socket.recv_fds(channel, 1, len(sent))
            if len(received) != len(sent):
                raise OSError(f"{len(received)} of {len(sent)} arena descriptors arrived")
            ours = dict(zip(sent, received))
            if isinstance(start["arena"], dict) and "vmm_fd" in start["arena"]:
                start["arena"]["vmm_fd"] = ours[start["arena"]["vmm_fd"]]
    finally:
        channel.close()


def _load_kernel(path: str, entry_point: str):
    """The entry point and, if the file defines one, its untimed ``prepare``."""
    spec = importlib.util.spec_from_file_location(harness.KERNEL_MODULE, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[harness.KERNEL_MODULE] = module
    spec.loader.exec_module(module)
    kernel = getattr(module, entry_point, None)
    if not callable(kernel):
        raise AttributeError(f"the file defines no callable '{entry_point}'")
    prepare = getattr(module, "prepare", None)
    return kernel, prepare if callable(prepare) else None


def _remove_kernels(remove) -> tuple[int, object]:
    """(fatbins removed, error or None). Before anything else runs: a removed kernel must
    never have been loaded."""
    if not remove:
        return 0, None
    try:
        removal = fatbin_removal.overwrite(remove)
    except (OSError, ValueError) as exc:
        return 0, exc  # reported in the hello: the sandbox must not serve
    if removal is None:
        return 0, f"{remove['library']} is not loaded here"
    return removal.removed, None


def _grader_clock(device, arena, first):
    """The grader's clock parts and the output heap (GPU), opened before confinement: the
    driver's stream memory operations need files confinement takes away."""
    if device.type != "cuda":
        return None, None
    from pytest_nodus.sandbox.heap import OutputHeap
    from pytest_nodus.shared.stream_ops import StreamMemoryOps

    clock = (go_word(arena), flag_word(arena), output_words(arena), StreamMemoryOps())
    where = first["heap"]
    return clock, OutputHeap(where["library"], arena[where["offset"]:where["offset"] + where["bytes"]], device)


def main(argv=None) -> int:
    marks = [["process", time.monotonic()]]  # start-up stages, reported before the kernel file loads
    args = _arguments(argv)
    requests = Connection(args.requests_fd, writable=False)
    replies = Connection(args.replies_fd, readable=False)
    if args.preload and args.role != "submission":
        # A trusted role in standby (grader/standby.py): its compiler's modules now, beside the
        # grader's start-up, instead of in its file's load on the grade's wall. Never a
        # submission's: inductor must not be imported before its templates are stubbed.
        for name in args.preload.split(","):
            importlib.import_module(name)
    marks.append(["preload", time.monotonic()])
    try:
        first = protocol.recv_request(requests)
    except EOFError:
        return 0  # spawned ahead of a grade that never launched it
    marks.append(["standby", time.monotonic()])
    os.environ.update(first["environ"])  # before the device context and Triton read them
    _descriptors(args.descriptors_fd, first)
    device = torch.device(first["device"])
    if device.type == "cuda":
        torch.cuda.set_device(device)
        torch.empty(1, device=device)  # create the context before the device files are locked down
    marks.append(["context", time.monotonic()])
    removed_fatbins, removal_error = _remove_kernels(first.get("remove"))
    marks.append(["removal", time.monotonic()])
    arena = open_shared(first["arena"], device)
    clock, heap = _grader_clock(device, arena, first)
    try:
        import triton  # noqa: F401  imported before confinement: the submission may use it
        import triton.language  # noqa: F401
    except ImportError:
        pass
    if os.environ.get("TRITON_INTERPRET") == "1":
        from pytest_nodus.sandbox import triton_interpreter

        triton_interpreter.install()
    marks.append(["arena", time.monotonic()])
    tripwire, filtered, max_tasks = None, False, None
    if args.role == "submission":
        unreadable = []
        if first["removed_templates"] and removal_error is None:
            try:
                unreadable = templates.stub_out(tuple(first["removed_templates"]))
            except (OSError, RuntimeError) as exc:
                removal_error = exc  # fail closed, as for fatbins: reported in the hello
        unreadable += find_packages(tuple(first["unreadable_packages"]))
        max_tasks = limit_tasks(first["max_tasks"])
        isolation, readable, filtered = confine(args.scratch, device, tuple(first["unreadable_libraries"]), unreadable)
        tripwire = guard.EscapeTripwire(readable)
        forget_project_root()
    else:
        isolation = "trusted"
    marks.append(["confinement", time.monotonic()])
    protocol.send_reply(replies, {"stage": protocol.STAGED, "marks": marks})
    try:
        if first.get("wait_for_load") and protocol.recv_request(requests).get("op") != protocol.LOAD:
            protocol.send_reply(replies, {"ok": False, protocol.HARNESS_ERROR: "expected LOAD after the start-up"})
            return 0
    except EOFError:
        return 0  # closed before its file was wanted
    integrity = guard.Integrity(harness, outputs)  # before the submission runs a single line
    try:
        if removal_error is not None:
            raise RuntimeError(f"kernels could not be removed: {removal_error}")
        kernel, prepare = _load_kernel(first["kernel"], first["entry_point"])
        if args.role == "submission":
            prepare = None  # untimed set-up is for the grader's own files (baselines); a submission's work is all timed
    except BaseException as exc:  # noqa: BLE001  a syntax error is a grade, not a crash
        protocol.send_reply(replies, {"ok": False, "isolation": isolation, "error": tracebacks.describe(exc)})
        return 0
    # Replies go through the module's attribute, looked up at each send: a submission that
    # rewrites it (tests/cheats/rmsnorm/forge_constant_time.py) must find it to rewrite.
    serving = harness.Harness(device, kernel, arena, audit=first["audit"], integrity=integrity, tripwire=tripwire,
                              prepare=prepare, clock=clock, heap=heap,
                              send=lambda reply: protocol.send_reply(replies, reply),
                              receive=lambda: protocol.recv_request(requests))
    protocol.send_reply(replies, {"ok": True, "isolation": isolation, "seccomp": filtered, "pid": os.getpid(),
                                   "removed_fatbins": removed_fatbins, "max_tasks": max_tasks})
    handlers = serving.handlers()
    while True:
        try:
            message = protocol.recv_request(requests)
        except EOFError:
            serving.audit.close()  # a profiler still running at the interpreter's end crashes it
            return 0
        try:
            reply = handlers[message["op"]](message)
        except Exception as exc:  # noqa: BLE001  harness failure: report, keep serving
            reply = {"ok": False, protocol.HARNESS_ERROR: f"{type(exc).__name__}: {exc}"[:500]}
        protocol.send_reply(replies, reply)


if __name__ == "__main__":
    sys.exit(main())
