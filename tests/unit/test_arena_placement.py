"""A call's inputs and receipts are placed in one half of the arena, the halves alternating."""

from __future__ import annotations

import pytest
import torch

from pytest_nodus.grader.inputs import ArenaPlacer, ArenaTooSmall
from pytest_nodus.shared.arena import ALIGN, arena_view


def _fresh():
    return {"x": torch.randn(4, 8).to(torch.bfloat16), "w": torch.randn(8).to(torch.bfloat16), "eps": 1e-6}


def test_consecutive_calls_never_overlap_and_addresses_repeat_every_other_call():
    placer = ArenaPlacer(torch.zeros(16 * ALIGN, dtype=torch.uint8))
    layouts = [placer.place(_fresh(), [((4, 8), "bfloat16")]).layout for _ in range(3)]
    offsets = [[where[0] for where in layout["inputs"].values()] + [r[0] for r in layout["receipts"]] for layout in layouts]
    assert offsets[0] == offsets[2] and not set(offsets[0]) & set(offsets[1])
    assert all(o % ALIGN == 0 for o in offsets[0] + offsets[1])
    assert all(o >= 8 * ALIGN for o in offsets[1])  # the second half


def test_the_sandbox_builds_the_same_views_from_the_layout():
    arena = torch.zeros(16 * ALIGN, dtype=torch.uint8)
    slot = ArenaPlacer(arena).place(_fresh(), [((4, 8), "bfloat16")])
    for name, (offset, shape, dtype) in slot.layout["inputs"].items():
        assert arena_view(arena, offset, shape, dtype).data_ptr() == slot.inputs[name].data_ptr()


def test_a_call_that_does_not_fit_twice_asks_for_a_bigger_arena():
    with pytest.raises(ArenaTooSmall):
        ArenaPlacer(torch.zeros(4 * ALIGN, dtype=torch.uint8)).place(_fresh(), [((4, 8), "bfloat16")])
