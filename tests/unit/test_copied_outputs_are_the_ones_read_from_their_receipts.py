"""Which outputs the grader read from their receipts, where the harness copies an output it
cannot leave in place (inside the timed call): on the GPU, the outputs whose word points at
their own receipt's bytes in the arena, not the heap; on the CPU, the ones it has no place
for in the sandbox's memory."""

from __future__ import annotations

from types import SimpleNamespace

import torch

from pytest_nodus.grader.reading import Reading


def _reading(clock) -> Reading:
    return Reading(report={"ok": True}, outputs=[], window_ms=1.0, child_ms=None, children_at_open=[],
                   opened_boot_ticks=0, pid=1, _clock=clock)


def test_on_the_gpu_an_output_read_at_its_receipt_was_copied():
    arena = torch.zeros(4096, dtype=torch.uint8)
    receipts = [arena[0:256], arena[256:512], arena[512:768]]
    spans = [(0, 256),        # read at its receipt: the harness copied it
             (2048, 2304),    # read in the heap, where the kernel wrote it
             None]            # no place: not a plain tensor (poison), not a copy
    clock = SimpleNamespace(cuda=True, arena=arena, output_spans=lambda: spans)
    assert _reading(clock).copied_outputs(receipts) == [0]


def test_on_the_cpu_an_output_without_a_place_was_copied():
    clock = SimpleNamespace(cuda=False, places=[[0x1000, 64], None])
    assert _reading(clock).copied_outputs([None, None]) == [1]
