"""The CUDA driver's stream memory operations, which torch does not bind.

``cuStreamWaitValue32`` lets the grader's stream wait for the flag word; the harness writes
the flag and the output words with ``cuStreamWriteValue32/64`` in its stream's order right
after the call (``grader/clock.py`` says why a flag and not a second event). Loaded by the
grader, and by the sandbox before it is confined (the driver's library must still be
readable then).
"""

from __future__ import annotations

import ctypes

_WAIT_GEQ = 0  # CU_STREAM_WAIT_VALUE_GEQ (cyclic comparison: the call number may wrap)


class StreamMemoryOps:
    """The three driver entry points, resolved once."""

    def __init__(self):
        driver = ctypes.CDLL("libcuda.so.1")
        self._wait = getattr(driver, "cuStreamWaitValue32_v2", None) or driver.cuStreamWaitValue32
        self._write = getattr(driver, "cuStreamWriteValue32_v2", None) or driver.cuStreamWriteValue32
        self._write64 = getattr(driver, "cuStreamWriteValue64_v2", None) or driver.cuStreamWriteValue64
        for fn in (self._wait, self._write):
            fn.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint32, ctypes.c_uint]
            fn.restype = ctypes.c_int
        self._write64.argtypes = [ctypes.c_void_p, ctypes.c_uint64, ctypes.c_uint64, ctypes.c_uint]
        self._write64.restype = ctypes.c_int

    def wait_geq(self, stream, word, value: int) -> None:
        self._check(self._wait(stream.cuda_stream, word.data_ptr(), value & 0xFFFFFFFF, _WAIT_GEQ), "wait")

    def write(self, stream, word, value: int) -> None:
        self._check(self._write(stream.cuda_stream, word.data_ptr(), value & 0xFFFFFFFF, 0), "write")

    def write64(self, stream, word, value: int) -> None:
        self._check(self._write64(stream.cuda_stream, word.data_ptr(), value & 0xFFFFFFFFFFFFFFFF, 0), "write")

    @staticmethod
    def _check(status: int, what: str) -> None:
        if status != 0:
            raise RuntimeError(f"cuStream{what.title()}Value32 failed with CUresult {status}")
