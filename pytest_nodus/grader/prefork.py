"""A grading host's warm process: every grade forked from it, its sandboxes spawned ahead.

A pipeline grading attempt after attempt on one GPU pays in every grade the interpreter's
start, pytest's, torch's and the grader's imports, and its sandboxes' start (each imports
torch too): seconds per grade on a GPU host (docs/throughput.md), none of it the grade's
work. This process imports the grader once; for each grade it has a child forked ahead,
which spawns that grade's sandboxes in standby (``standby.spawn_ahead``) and waits for its
command line. A request hands the child its command line; the child runs pytest as
``python -m pytest`` would, and the next child is forked at once, so the next grade's
sandboxes import torch while this grade runs.

What a grade inherits is only what this process did before any grade: it imports, and it
never grades, never loads a kernel file, never opens a file of a grade's and never starts
CUDA (a CUDA context does not survive a fork; each grade starts its own). Each grade is a
fresh fork of that state, its sandboxes its own, its seed drawn in it (``secrets``), its
end the end of its own process: nothing of one grade reaches the next.

Protocol, one JSON object per line: a request on stdin, ``{"args": [...], "cwd": DIR,
"output": FILE}`` (pytest's arguments, its working directory, where its terminal output
goes); replies on stdout, ``{"pid": N}`` as the grade starts (to kill it at a caller's
timeout) and ``{"exit": STATUS}`` as it ends (``subprocess``'s returncode: negative for a
signal). One grade at a time; the caller closing stdin ends the process and its waiting
child. The client is ``pytest_nodus.WarmGrader`` (``grader/api.py``).

Runs in the grading host's process and its forks only; never in a sandbox.
"""

from __future__ import annotations

import argparse
import atexit
import ctypes
import gc
import json
import os
import random
import signal
import sys
import threading
import traceback
import warnings

from pytest_nodus.grader import frozen_heap

# What every grade imports (a CPU grade of rmsnorm imports ~1500 modules; on a GPU host
# torch's import alone takes seconds). Hypothesis through grader/plain_import: as a grade
# would, past pytest's assertion rewriter.
IMPORTS = ("numpy", "torch", "triton", "pytest", "xdist", "pytest_nodus.grader.plugin", "pytest_nodus.grader.grading",
           "pytest_nodus.grader.report", "pytest_nodus.grader.suite", "pytest_nodus.grader.fuzz")
_PR_SET_PDEATHSIG = 1


def _import_grader() -> None:
    import importlib

    for name in IMPORTS:
        importlib.import_module(name)
    from pytest_nodus.grader import bytecode, plain_import

    plain_import.hypothesis()
    bytecode.key()  # what every grade's sandbox spawns ask of the installation, read once
    import torch

    # The invariant that makes forking safe for CUDA: no context in this process.
    if torch.cuda.is_initialized():
        raise RuntimeError("the warm process started CUDA, which no fork of it could use")


def _ready(parent: int, device: str, attempts: int) -> tuple[int, int]:
    """Fork the next grade's child: (its pid, the pipe to it). The child never returns: it
    waits for its command line, grades and exits with pytest's exit status."""
    # The only thread besides this one is OpenBLAS's pool (numpy's, imported by torch), whose
    # pthread_atfork handlers stop it before a fork and restart it after: nothing it holds is
    # copied held. A Python thread here would be: none may run.
    if threading.active_count() != 1:
        raise RuntimeError(f"the warm process forks from its one Python thread, not {threading.active_count()}")
    read, write = os.pipe()
    frozen_heap.freeze_for_fork()  # a grade's collections skip what this process imported
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12's notice of that pool
        pid = os.fork()
    if pid == 0:
        os.close(write)
        try:
            status = _grade(read, parent, device, attempts)
        except BaseException:  # noqa: BLE001  (the child's end, whatever ends it)
            traceback.print_exc()
            status = 1
        _exit(status)
    os.close(read)
    return pid, write


def _read_all(fd: int) -> bytes:
    chunks = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks)


def _grade(request_fd: int, parent: int, device: str, attempts: int) -> int:
    """In the forked child: spawn the sandboxes ahead, wait for the command line, run pytest."""
    # Killed with the warm process: a grade left running without its caller would hold its GPU.
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:
        return 1
    # The caller's pipes are the warm process's: a waiting child holding them would keep
    # the caller from seeing that process end.
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    os.close(null)
    # A fresh interpreter seeds these from the OS; a fork shares its parent's state. No
    # verdict draws from them (grade seeds come from secrets), but a grade must look like one.
    random.seed()
    import numpy

    numpy.random.seed()
    from pytest_nodus.grader import standby

    try:
        standby.spawn_ahead(device, attempts)
    except Exception as exc:  # the grade spawns its own, as without a warm process
        print(f"pytest-nodus warm process: sandboxes not spawned ahead: {exc!r}", file=sys.stderr)
    data = _read_all(request_fd)
    if not data:  # the warm process is ending
        standby.close_ahead()
        return 0
    request = json.loads(data)
    os.chdir(request["cwd"])
    sys.path[0] = request["cwd"]  # as ``python -m pytest`` run there
    out = os.open(request["output"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(out)
    sys.argv = ["pytest", *request["args"]]
    import pytest

    return int(pytest.console_main())


def _exit(status: int) -> None:
    """End a grade's process as the interpreter's exit would, less the teardown of every
    module: its threads joined, its atexit handlers run (temporary folders, logging), its
    output flushed. Tearing down the ~1500 modules and torch's heap of a grade took 0.6 s of
    a CPU grade's wall, after its result was written (docs/results/throughput.md)."""
    for thread in threading.enumerate():
        if thread is not threading.main_thread() and not thread.daemon:
            thread.join()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


def _write_all(fd: int, data: bytes) -> None:
    """A batch's request can outgrow a pipe's buffer; the child reads it whole meanwhile."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def _reply(message: dict) -> None:
    _write_all(1, (json.dumps(message) + "\n").encode())


def serve(device: str, attempts: int) -> int:
    """The warm process's loop, one grade at a time, until the caller closes stdin."""
    me = os.getpid()
    pid, to_child = _ready(me, device, attempts)
    for line in sys.stdin.buffer:
        try:
            _write_all(to_child, line)
        except BrokenPipeError:  # the waiting child was killed from outside: a fresh one grades
            os.close(to_child)
            os.waitpid(pid, 0)
            pid, to_child = _ready(me, device, attempts)
            _write_all(to_child, line)
        os.close(to_child)
        running = pid
        pid, to_child = _ready(me, device, attempts)  # the next grade's sandboxes start now
        _reply({"pid": running})
        _, status = os.waitpid(running, 0)
        _reply({"exit": os.waitstatus_to_exitcode(status)})
    os.close(to_child)  # the waiting child reads nothing and ends
    os.waitpid(pid, 0)
    gc.unfreeze()  # for the interpreter's own teardown
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_nodus.grader.prefork", description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="auto", help="the grades' --nodus-device: what the expert's standby preloads")
    parser.add_argument("--attempts", type=int, default=1, help="submission sandboxes spawned ahead per grade")
    args = parser.parse_args(argv)
    _import_grader()
    return serve(args.device, args.attempts)


if __name__ == "__main__":
    sys.exit(main())
