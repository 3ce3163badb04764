"""The spin before each GPU window, made a probe that sees whether the GPU is the grader's alone.

The grader's stream spins before every window opens (grader/clock.py says why: the host's
enqueueing of the call must reach the GPU before the GPU runs dry). Contexts of different
processes do not run side by side on a GPU: the GPU time-slices between them. So a spin that
reads the GPU's global timer in a tight loop sees a jump whenever another context held the
GPU: on the H200 a 2.4 ms loop's largest step is 32-64 ns alone and 0.3-2.4 ms while another
process's kernels run (``bash tools/gpu_check.sh walls``, docs/sealing.md).

A window whose spin saw such a jump was opened on a GPU that was not idle of other work: the
other role's work launched before it was frozen (grader/cgroup.py freezes its threads, not
the GPU work they queued), the timed sandbox's own threads, or another process on the GPU.
Its call is not timed: the round is graded for correctness and run again on fresh inputs
(grader/grading.py). The probe costs nothing the spin did not already cost.
"""

from __future__ import annotations

import torch

# How long the spin lasts. ~4 ms: with ~1 ms the attention expert graded as a submission read
# 0.913-1.077x per rerun at its three shortest sizes on the H200, with 4 ms 0.994-0.998x
# (docs/timing.md). It is before the window opens: wall time only.
SPIN_NS = 4_000_000
# A larger step between two timer reads means another context held the GPU: 1500x the
# largest step seen alone, a third of the shortest seen with another context's kernels.
GAP_LIMIT_NS = 100_000

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
    """One per grader clock: the spin's result lives on the GPU until the window is read."""

    def __init__(self, device: torch.device):
        self.largest_gap = torch.zeros(1, dtype=torch.int64, device=device)
        _probe()[(1,)](self.largest_gap, 1000)  # built now: a build inside a spin would be seen as a gap

    def spin(self) -> None:
        """Queue the spin on the current stream."""
        _probe()[(1,)](self.largest_gap, SPIN_NS)

    def contended_ns(self) -> int:
        """The last spin's largest step, in ns, once its window has closed; 0 when it is
        under :data:`GAP_LIMIT_NS` (the GPU was the grader's alone)."""
        gap = int(self.largest_gap.item())
        return gap if gap > GAP_LIMIT_NS else 0
