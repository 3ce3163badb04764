"""Replies from a sandbox are JSON objects within a size limit, or a protocol error."""

from __future__ import annotations

import threading
from multiprocessing import Pipe

import pytest

from pytest_nodus.shared import protocol


def _roundtrip(data: bytes):
    """What the grader makes of ``data`` sent by a sandbox. The sender is a thread: a pipe
    holds far less than a reply may, so a send with nobody reading would block."""
    reader, writer = Pipe(duplex=False)

    def send():
        try:
            writer.send_bytes(data)
        except OSError:  # the reader gave up on an oversized message and closed its end
            pass

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    try:
        return protocol.recv_reply(reader)
    finally:
        reader.close()
        sender.join(timeout=5)


def test_a_json_object_is_a_reply():
    reader, writer = Pipe(duplex=False)
    protocol.send_reply(writer, {"ok": True, "stage": protocol.ARMED})
    assert protocol.recv_reply(reader) == {"ok": True, "stage": "armed"}


@pytest.mark.parametrize("data", [b"\x80\x04K\x01.", b"[1, 2]", b"not json"], ids=["pickle", "list", "text"])
def test_anything_else_is_a_protocol_error(data):
    with pytest.raises(protocol.ProtocolError):
        _roundtrip(data)


def test_a_reply_over_the_limit_is_a_protocol_error():
    with pytest.raises(protocol.ProtocolError, match="too large"):
        _roundtrip(b'{"x": "' + b"a" * protocol.MAX_REPLY_BYTES + b'"}')
