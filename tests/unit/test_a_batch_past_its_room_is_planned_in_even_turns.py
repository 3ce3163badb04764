"""A batch larger than its GPU holds is graded in turns (grader/turns.py): each turn at most
the room the GPU's memory leaves at the selected sizes (or ``--nodus-batch-room``), as even as
they split, every attempt in exactly one turn, in order. The CPU reserves no GPU memory: one
turn unless capped."""

from types import SimpleNamespace

import pytest

from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
from pytest_nodus.grader import gpu_ledger, turns
from pytest_nodus.grader.gpu_ledger import GIB, Ledger, batch_room, need_bytes

CUDA, CPU = SimpleNamespace(kind="cuda"), SimpleNamespace(kind="cpu")
EVERY_SIZE = list(ATTENTION.profile("cuda").sizes)


@pytest.mark.parametrize("call_gib, budget_gib, capacity_gib", [(2.5, 16, 140), (0.01, 1, 80), (30, 16, 40)])
def test_the_room_is_the_most_attempts_whose_reservation_fits(call_gib, budget_gib, capacity_gib):
    call, budget, capacity = int(call_gib * GIB), int(budget_gib * GIB), capacity_gib * GIB
    room = batch_room(call, budget, capacity)
    assert room >= 1
    assert need_bytes(call, budget, room + 1) > capacity
    assert room == 1 or need_bytes(call, budget, room) <= capacity


@pytest.mark.parametrize("capacity_gib, room", [(140, 3), (80, 1)])  # about an H200's and an H100's
def test_attention_attempts_per_turn_follow_the_gpus_memory(monkeypatch, capacity_gib, room):
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: Ledger("gpu0", capacity=capacity_gib * GIB))
    assert turns.room(ATTENTION, EVERY_SIZE, 16, CUDA, None) == room
    assert turns.room(ATTENTION, EVERY_SIZE, 16, CUDA, 2) == min(room, 2)  # --nodus-batch-room caps it
    assert turns.room(ATTENTION, EVERY_SIZE, 2, CUDA, None) == min(room, 2)  # never more than the batch


def test_fewer_selected_sizes_can_only_widen_the_room(monkeypatch):
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: Ledger("gpu0", capacity=80 * GIB))
    smallest = min(EVERY_SIZE, key=ATTENTION.contract.call_bytes)
    assert turns.room(ATTENTION, [smallest], 16, CUDA, None) >= turns.room(ATTENTION, EVERY_SIZE, 16, CUDA, None)


def test_the_cpu_holds_every_attempt_unless_capped(monkeypatch):
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: Ledger("gpu0", capacity=1))
    assert turns.room(ATTENTION, EVERY_SIZE, 16, CPU, None) == 16
    assert turns.room(ATTENTION, EVERY_SIZE, 16, CPU, 5) == 5


@pytest.mark.parametrize("attempts, room, split", [(16, 3, [3, 3, 3, 3, 2, 2]), (8, 3, [3, 3, 2]), (4, 3, [2, 2]),
                                                   (3, 1, [1, 1, 1]), (5, 5, [5])])
def test_turns_are_even_and_hold_every_attempt_once_in_order(attempts, room, split):
    planned = turns.plan(attempts, room)
    assert [len(turn) for turn in planned] == split
    assert [i for turn in planned for i in turn] == list(range(attempts))
