"""Whether a stream waiting on a word is released by each way of writing that word, on the GPU.

    python3 tools/probes/gate_selftest.py

The grader's window could open on a gate word its stream waits for (``cuStreamWaitValue32``)
once the harness reports the call enqueued. For each way of writing the word: a stream
waits on it, an event is recorded behind the wait; after 20 ms the event must still be
pending, and once the word is written it must complete within a second. Several streams
are made first, as a grade makes several clocks, so that two of them may share a hardware
queue. Prints one line per way: released, or stuck.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from pytest_nodus.shared.stream_ops import StreamMemoryOps  # noqa: E402


def trial(name: str, word: torch.Tensor, write) -> None:
    ops = StreamMemoryOps()
    streams = [torch.cuda.Stream() for _ in range(12)]
    waiting = streams[0]
    done = torch.cuda.Event()
    ops.wait_geq(waiting, word, 1)
    done.record(waiting)
    time.sleep(0.02)
    early = done.query()
    write(ops, streams, word)
    deadline = time.monotonic() + 1.0
    while not done.query() and time.monotonic() < deadline:
        time.sleep(1e-4)
    print(f"{name:44s} pending before the write: {not early}  released after it: {done.query()}", flush=True)
    if not done.query():
        word.fill_(1)  # free the stream whatever it takes, for the next trial


def main() -> int:
    trial("pinned host word, host store", torch.zeros(1, dtype=torch.int32, pin_memory=True),
          lambda ops, streams, word: word.fill_(1))
    trial("device word, write from another stream", torch.zeros(1, dtype=torch.int32, device="cuda"),
          lambda ops, streams, word: ops.write(streams[1], word, 1))
    trial("device word, write from the 9th stream", torch.zeros(1, dtype=torch.int32, device="cuda"),
          lambda ops, streams, word: ops.write(streams[8], word, 1))
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
