"""The messages between the grader and a sandbox: one request, then its reply, over pipes.

Requests (grader -> sandbox) are pickled: the sandbox trusts the grader. Replies (sandbox
-> grader) are JSON only, size-limited and checked by the grader: unpickling anything the
submission could write would hand it the grader process.

A call is three messages, so that only the call itself sits inside the grader's window:

``CALL``   arm: build the arguments over the slots named in ``layout``, scrub free memory,
           synchronise; reply ``{"ok", "stage": ARMED}``.
``GO``     run it: the reply ``{"ok", "stage": ENQUEUED}`` comes as soon as the call has
           returned (on the CPU with ``outputs``: where they lie in the sandbox's memory,
           then the sandbox waits for ``ACK``); then the *report*:
           ``{"ok", "flags", "t_stream_ms", "t_call_ms"}`` or ``{"ok": False, "error"}``.
``FINISH`` after a size: the late-write check and the kernel audit, ``{"ok", "flags", "audit"}``; with
           ``"audit": False`` (the trusted expert, whose report nobody reads) no audit is taken and
           the profiler runs on, so that every role is timed under a running profiler alike.
``WARM``   a size's set-up beside the batch's other attempts' (``--nodus-warm-together``): run the kernel
           once on the inputs in ``layout``, untimed, its outputs dropped unread; reply
           ``{"ok"}`` or ``{"ok": False, "error"}``. Nothing of it is verified or kept: every
           call of the rounds after it is.

There is no request to end: the grader kills a sandbox it is done with (SIGKILL to its cgroup
and process group), and one whose request pipe closes returns.

The first message (``START``) says what the spawned process runs (the kernel file's copy,
its entry point, the device, the variables to set, what is kept out, its task limit) and hands
over the arena (its file descriptors, on the GPU, cross a socket of their own just before),
the heap and the kernels to remove. It is answered with ``{"stage": STAGED, "marks"}`` once the
sandbox is ready and before the kernel file loads (its start-up stages, ``[name, monotonic s]``:
``grader/phases.py``). A submission's file (``START``'s ``wait_for_load``) loads only at
``LOAD``: a batch's sandboxes start side by side, but their files load one at a time, so that
GPU work a load leaves running is known to be that file's (``Grader.charge_load``); the
grader's own files load at once. The load is answered by the *hello*,
``{"ok", "isolation", "pid", "removed_fatbins"}`` or ``{"ok": False, "error"}`` when the kernel
file did not load.
An ``error`` is ``{"type", "message", "frames"}``, ``frames`` the kernel file's lines of its
traceback (``sandbox/tracebacks.py``), each ``{"line", "function", "text"}``.
A reply holding ``HARNESS_ERROR`` means the harness itself failed.
"""

from __future__ import annotations

import json
import pickle
from multiprocessing.connection import Connection
from typing import Any

START, LOAD, CALL, GO, ACK, FINISH, WARM = "start", "load", "call", "go", "ack", "finish", "warm"
ARMED, ENQUEUED, STAGED = "armed", "enqueued", "staged"
HARNESS_ERROR = "harness_error"
# Reply keys a call's report must hold, numbers the grader checks before using them.
TIME_KEYS = ("t_stream_ms", "t_call_ms")

MAX_REPLY_BYTES = 1 << 20

# The sandbox's copy of the kernel file, in its scratch: the name its tracebacks carry, which
# the grader replaces with the author's file name.
KERNEL_MODULE = "kernel_under_test"
KERNEL_FILE = f"{KERNEL_MODULE}.py"


class ProtocolError(Exception):
    """The sandbox sent something that is not a well-formed reply."""


def send_request(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def recv_request(conn: Connection) -> dict[str, Any]:
    return pickle.loads(conn.recv_bytes())


def send_reply(conn: Connection, message: dict[str, Any]) -> None:
    conn.send_bytes(json.dumps(message, allow_nan=True).encode())


def recv_reply(conn: Connection) -> dict[str, Any]:
    try:
        data = conn.recv_bytes(MAX_REPLY_BYTES)
    except OSError as exc:  # message over the size limit
        raise ProtocolError(f"reply too large or unreadable: {exc}") from None
    try:
        message = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError("reply is not JSON") from None
    if not isinstance(message, dict):
        raise ProtocolError("reply is not a JSON object")
    return message
