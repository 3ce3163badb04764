"""Before each timed GPU window: a probe that shows the GPU idle of every other context.

Contexts of different processes do not run side by side on a GPU: the GPU time-slices
between them. So a loop that reads the GPU's global timer sees a jump whenever another
context held the GPU: on the H200 a 2.4 ms loop's largest step is 32-64 ns alone and
0.3-2.4 ms while another process's kernels run (``bash tools/gpu_check.sh walls``,
docs/sealing.md).

The probe runs on the grader's stream ahead of the window, and the grader waits for it to
end before it tells the sandbox to go: while it runs, the called sandbox has nothing queued
(its harness synchronised when it armed the call) and the others are frozen (grader/cgroup.py
stops their threads, not the GPU work they already queued). A jump then is work of another
context: a frozen sandbox's leftovers, or another process. A window opened after such a probe
is not timed: its round is verified, then run again on fresh inputs (grader/grading.py).

The probe must run while the called sandbox has nothing queued: to the GPU's scheduler a
sandbox stream waiting on ``go`` is work of another context too, and it shows as steps.
"""

from __future__ import annotations

import time
from typing import Callable

import torch

# How long the probe lasts: longer than the longest step seen with another context's kernels
# (2.4 ms), so another context with work gets at least one slice inside it. Wall time only,
# before the window: ~4 ms per timed call.
PROBE_NS = 4_000_000
# A larger step between two timer reads means another context held the GPU: 1500x the
# largest step seen alone, a third of the shortest seen with another context's kernels.
GAP_LIMIT_NS = 100_000

# How long a trusted role's set-up waits for the GPU to be the grader's alone (settle). An
# honest submission leaves no GPU work behind (its harness synchronises the whole device
# before replying, and the sandbox is frozen after); what is left is another process's, or
# work a submission's thread queued after that synchronise: another grade's untimed burst
# on a shared card (a reference, a fuzzed call) is seconds, and every first-call limit is
# longer.
SETTLE_S = 10.0
SETTLE_PAUSE_S = 0.02  # between probes: a waiting grader takes none of the GPU's slices

_kernel = None


def _probe():
    global _kernel
    if _kernel is None:
        import triton
        import triton.language as tl

        @triton.jit
        def spin_probe(out, span_ns):
            start = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                              pack=1)
            previous = start
            largest = start - start
            while previous - start < span_ns:
                now = tl.inline_asm_elementwise("mov.u64 $0, %globaltimer;", "=l", [], dtype=tl.int64, is_pure=False,
                                                pack=1)
                largest = tl.maximum(largest, now - previous)
                previous = now
            tl.store(out, largest)

        _kernel = spin_probe
    return _kernel


class IdleProbe:
    """One per grader clock: the probe's result stays on the GPU until its window is read."""

    def __init__(self, device: torch.device):
        self.largest_gap = torch.zeros(1, dtype=torch.int64, device=device)
        self._done = torch.cuda.Event()
        _probe()[(1,)](self.largest_gap, 1000)  # built now: a build inside a probe would be seen as a step

    def run(self) -> None:
        """Queue the probe on the current stream."""
        _probe()[(1,)](self.largest_gap, PROBE_NS)
        self._done.record()

    def wait(self) -> None:
        """Until the queued probe has ended (the host, before it sends ``go``)."""
        self._done.synchronize()

    def contended_ns(self) -> int:
        """The last probe's largest step, in ns, once it has ended; 0 when it is under
        :data:`GAP_LIMIT_NS` (the GPU was the grader's alone)."""
        gap = int(self.largest_gap.item())
        return gap if gap > GAP_LIMIT_NS else 0


def settle(step_ns: Callable[[], int], limit_s: float | None = None, pause_s: float = SETTLE_PAUSE_S) -> int:
    """Probe (``step_ns``: one probe run alone, its contended step or 0) until the GPU is
    idle of other contexts; 0 once it is, else the last step once ``limit_s`` has passed.

    Before the expert's set-up at a size. What it builds there it keeps for the grade, and
    the persistent caches keep it for later grades: inductor's autotuning and the MoE
    expert's eager-or-compiled choice time candidates on the GPU, and a candidate timed
    beside another context's kernels loses, so GPU work left running by a submission
    (``tests/cheats/rmsnorm/contend_with_the_experts_setup.py``) would slow the expert for
    good. The timed windows are voided instead (``grader/rounds.py``); a set-up cannot be,
    so it waits, with every other sandbox frozen, and only ever starts on an idle GPU.
    """
    deadline = time.monotonic() + (SETTLE_S if limit_s is None else limit_s)
    while True:
        step = step_ns()
        if not step or time.monotonic() >= deadline:
            return step
        time.sleep(pause_s)
