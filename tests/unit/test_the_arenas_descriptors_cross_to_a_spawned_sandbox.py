"""A sandbox spawned before its arena existed receives the arena's file descriptors (the GPU
arena's memory, shared/vmm.py) over its descriptor channel at its launch, and maps the one its
first message names: the grader's number for it becomes the sandbox's own."""

from __future__ import annotations

import os
import socket

from pytest_nodus.sandbox.__main__ import _descriptors


def test_the_named_descriptor_is_the_one_received():
    grader_end, sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    memory = os.memfd_create("arena")
    try:
        start = {"descriptors": [memory], "arena": {"vmm_fd": memory, "mapped_bytes": 4096}}
        socket.send_fds(grader_end, [b"d"], [memory])
        _descriptors(sandbox_end.detach(), start)
        received = start["arena"]["vmm_fd"]
        assert received != memory and os.fstat(received).st_ino == os.fstat(memory).st_ino
        os.close(received)
    finally:
        os.close(memory)
        grader_end.close()


def test_a_cpu_arena_receives_nothing_and_the_channel_closes():
    grader_end, sandbox_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    start = {"descriptors": [], "arena": {"path": "/dev/shm/x"}}
    fd = sandbox_end.detach()
    _descriptors(fd, start)
    assert start["arena"] == {"path": "/dev/shm/x"}
    assert grader_end.recv(1) == b""  # the sandbox's end is closed: the submission never holds it
    grader_end.close()
