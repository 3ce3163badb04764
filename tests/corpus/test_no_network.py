"""No datagram leaves a sandbox: a listener on loopback (UDP and an abstract unix socket) hears nothing while a kernel that sends every call's shape is graded."""

from __future__ import annotations

import socket

import pytest

from conftest import CHEATS
from expectations import SUITES, read

pytestmark = pytest.mark.corpus

CHEAT = CHEATS / "rmsnorm" / "udp_to_loopback.py"


def _listeners():
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 47391))  # the cheat's PORT
    unix = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    unix.bind(b"\0nodus-leak-canary")
    for s in (udp, unix):
        s.setblocking(False)
    return udp, unix


def _heard(sockets) -> list[bytes]:
    heard = []
    for s in sockets:
        while True:
            try:
                heard.append(s.recv(4096))
            except BlockingIOError:
                break
    return heard


def test_a_listener_on_loopback_hears_nothing_from_a_sandbox(grade):
    listeners = _listeners()
    try:
        # The listeners work: a datagram from this process arrives.
        socket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b"probe", ("127.0.0.1", 47391))
        assert _heard(listeners) == [b"probe"]
        suite, options = SUITES["rmsnorm"]
        result = grade(CHEAT, *[o for o in options if o != "--nodus-fail-fast"], suite=suite, sealed=True)
        assert read(CHEAT).matches("cpu", result.document) is None
        assert _heard(listeners) == []
        assert "network-namespace" in result.document["isolation"]
    finally:
        for s in listeners:
            s.close()
