"""Reading a CPU sandbox's outputs out of its own memory (``process_vm_readv``).

On the CPU the harness reports where each output lies in its process, and the grader reads
the bytes itself, as the sandbox's parent, before it reads the sandbox's CPU clock: the
work that made the outputs is then on the clock, whichever thread did it.
"""

from __future__ import annotations

import ctypes


class _IOVec(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("length", ctypes.c_size_t)]


_libc = None


def read_process_memory(pid: int, address: int, into: int, nbytes: int) -> bool:
    """Copy ``nbytes`` at ``address`` in process ``pid`` (the grader's child) to ``into``."""
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.process_vm_readv.restype = ctypes.c_ssize_t
    local, remote = _IOVec(into, nbytes), _IOVec(address, nbytes)
    return _libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) == nbytes


def valid_places(where, outputs) -> list:
    """The harness's ``[address, bytes]`` per output, kept only where it is well formed and
    the size is the contract's (anything else: None, the receipt, which holds poison
    unless the harness copied into it)."""
    places = []
    for slot, (nbytes, _, _) in enumerate(outputs):
        place = where[slot] if isinstance(where, list) and slot < len(where) else None
        ok = (isinstance(place, list) and len(place) == 2 and all(type(v) is int for v in place)
              and place[0] > 0 and place[1] == nbytes)
        places.append(place if ok else None)
    return places
