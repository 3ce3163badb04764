"""GPU memory reserved by whole grades before they start, so grades sharing a GPU never run
it out of memory between them.

Several grades on one GPU (an RL pipeline's batch, ``tools/gpu_check.sh``'s lanes) each hold
references, pristine inputs, two sandboxes' arenas and heaps, and whatever the expert and the
submission allocate besides. Together they can ask for more than the GPU has, and then
whichever allocation meets the shortage fails: the grader's own (``gpu_memory`` waits and
retries that) or, worse, a correct kernel's, which is then graded as raising. A grade
therefore reserves what it may need (:func:`need_bytes`) in a per-GPU ledger before its
first size, and waits while the reservations already there leave too little; a grade that
needs more than the whole GPU starts only on a GPU no other grade holds.

The ledger is a JSON file of ``{pid: bytes}`` under an exclusive ``flock``. A reservation
lives as long as its grader process: entries whose pid is gone (a grader killed mid-grade)
are dropped by the next reader, so a crash never strands memory. Graders that do not use
the ledger (other tools on the GPU) are not seen; the grader's out-of-memory retry still
covers them. Runs only in the grader.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
import time
from pathlib import Path

from pytest_nodus.grader.devices import DeviceBusy

GIB = 1 << 30
# Per process on the GPU, beyond what it allocates: its CUDA context and the libraries'
# modules and handles (cuBLAS, cuDNN, Triton), about 0.5-0.8 GiB on the H200 with torch 2.11.
CONTEXT_BYTES = 1 * GIB
# The grader's own per-call buffers, in multiples of one call's inputs and outputs: the
# pristine inputs, the fp32 references (outputs twice over at most), the outputs read back
# and compared, and the checks' temporaries.
GRADER_CALLS = 4
# Each sandbox's arena holds two calls and its heap two calls more (grader/sandbox_process.py,
# grader/heap_build.py): four calls per sandbox, two sandboxes (expert, submission).
SANDBOX_CALLS = 2 * 4


def need_bytes(call_bytes: int, budget_bytes: int, submissions: int = 1, expert_bytes: int | None = None) -> int:
    """What a grade may hold at its largest size: the grader's buffers, the expert's and each
    submission's arenas and heaps, their processes' contexts and the grader's, each
    submission allocating up to the environment's published budget outside its heap and the
    expert up to its own (``expert_bytes``; None: the submissions' budget). A batch of N
    attempts holds N submission sandboxes at once."""
    sandboxes = 1 + submissions
    expert = budget_bytes if expert_bytes is None else expert_bytes
    return (GRADER_CALLS + SANDBOX_CALLS // 2 * sandboxes) * call_bytes + (1 + sandboxes) * CONTEXT_BYTES \
        + submissions * budget_bytes + expert


def batch_room(call_bytes: int, budget_bytes: int, capacity: int, expert_bytes: int | None = None) -> int:
    """How many attempts one batch can hold at once on a GPU of ``capacity`` bytes: at least
    one (a lone grade that needs more than the GPU still runs, alone on it). A batch past this
    would wait for memory its own sandboxes hold, to the end of ``--nodus-gpu-wait``: it is
    graded in turns of this many instead (grader/turns.py)."""
    room = 1
    while need_bytes(call_bytes, budget_bytes, room + 1, expert_bytes) <= capacity:
        room += 1
    return room


def budgets(profile) -> tuple[int, int]:
    """(a submission's, the expert's) GPU memory budget in bytes, from an environment's profile."""
    return int(profile.memory_gib * GIB), int(profile.expert_budget_gib * GIB)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class Ledger:
    """The reservations on one GPU (``key``: its uuid), of ``capacity`` bytes in all."""

    def __init__(self, key: str, capacity: int, directory: Path | None = None):
        self.path = Path(directory or tempfile.gettempdir()) / f"pytest-nodus-gpu-{key}.ledger"
        self.capacity = capacity

    def _update(self, change) -> object:
        """``change(entries) -> result`` on the live entries, under the lock; written back."""
        with open(self.path, "a+") as handle:
            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                handle.seek(0)
                try:
                    entries = {int(p): int(b) for p, b in json.loads(handle.read() or "{}").items()}
                except (ValueError, AttributeError):
                    entries = {}  # a torn or foreign file: start over rather than block every grade
                entries = {p: b for p, b in entries.items() if _alive(p)}
                result = change(entries)
                handle.seek(0)
                handle.truncate()
                handle.write(json.dumps({str(p): b for p, b in entries.items()}))
                handle.flush()
                return result
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)

    def held(self) -> dict[int, int]:
        return self._update(lambda entries: dict(entries))

    def try_reserve(self, nbytes: int, pid: int | None = None) -> bool:
        """Reserve ``nbytes`` for ``pid`` (this process) if they fit beside the others, or if
        no other grade holds the GPU at all; a pid reserves once (a second call replaces)."""
        pid = os.getpid() if pid is None else pid

        def change(entries):
            others = sum(b for p, b in entries.items() if p != pid)
            if others and others + nbytes > self.capacity:
                return False
            entries[pid] = nbytes
            return True

        return self._update(change)

    def reserve(self, nbytes: int, wait_s: float, pid: int | None = None) -> float:
        """Wait until ``nbytes`` fit, at most ``wait_s`` (else DeviceBusy); the ms waited."""
        asked, pause = time.monotonic(), 0.05
        while not self.try_reserve(nbytes, pid):
            if time.monotonic() - asked >= wait_s:
                held = sum(self.held().values())
                raise DeviceBusy(f"waited {wait_s:g} s for {nbytes / GIB:.1f} GiB of GPU memory: other grades "
                                 f"reserve {held / GIB:.1f} of {self.capacity / GIB:.1f} GiB")
            time.sleep(pause)
            pause = min(2 * pause, 2.0)
        return 1e3 * (time.monotonic() - asked)

    def release(self, pid: int | None = None) -> None:
        pid = os.getpid() if pid is None else pid
        self._update(lambda entries: entries.pop(pid, None))


def for_device(device) -> Ledger | None:
    """The ledger of ``device``'s GPU; None off the GPU (CPU grades share no such memory)."""
    if device.kind != "cuda":
        return None
    import torch

    properties = torch.cuda.get_device_properties(device.index)
    return Ledger(str(getattr(properties, "uuid", device.index)), properties.total_memory)
