"""A batch larger than its GPU holds, graded in turns inside one pytest run.

A batch's attempts are timed against one expert run, every attempt's sandbox alive and
holding its card's GPU memory budget (``grader/gpu_ledger.py``): on an H100 one attention
attempt fits beside the expert at every size, three on an H200. A batch of more attempts is
graded in *turns* of at most that many (``room``), one after another in the same pytest
run: each turn's sandboxes are started for it and killed at its end, while pytest's start-up,
the expert's sandbox and its set-up (its graph builds and compiles per size) and the grade's
seed serve every turn. Within a turn the attempts share each round's inputs, reference and
expert calls, as a batch that fits does; across turns they are timed in rounds of their own
against the same expert, as separate grades are, so a verdict never depends on the turn.

How pytest sees it: every graded test takes the ``nodus_turn`` fixture, parametrized over the
turns the batch could need at any size it collects, so that the tests of one turn run
together (turn-major: the session's item order, ``turn_of``); once ``-k`` has selected the
sizes, the room is counted for those and the turns past what they need are deselected. A
grade of one file, and a batch that fits, has one turn and no parameter. Imports no torch.
"""

from __future__ import annotations

from pytest_nodus.grader.batch_files import runs_of

FIXTURE = "nodus_turn"


def room(env, planned: list, attempts: int, device, cap: int | None) -> int:
    """How many of ``attempts`` one turn holds at the sizes ``planned``: what the GPU's memory
    holds (every attempt on the CPU, whose grades reserve no GPU memory), at most ``cap``
    (``--nodus-batch-room``), at least one."""
    most = attempts
    if planned and device.kind == "cuda" and device.kind in env.profiles:
        from pytest_nodus.grader import gpu_ledger

        capacity = gpu_ledger.for_device(device).capacity
        call = max(env.contract.call_bytes(d) for d in planned)
        budget, expert = gpu_ledger.budgets(env.profile(device.kind))
        most = gpu_ledger.batch_room(call, budget, capacity, expert)
    return max(1, min(most, attempts, cap if cap is not None else attempts))


def plan(attempts: int, room_for: int) -> list[list[int]]:
    """The attempts' indices in turns of at most ``room_for``, in order, as even as they split
    (16 in turns of 3: 3 3 3 3 2 2), so that no turn is one attempt where two fit."""
    return runs_of(list(range(attempts)), room_for)


def turn_of(item) -> int:
    callspec = getattr(item, "callspec", None)
    return int(callspec.params.get(FIXTURE, 0)) if callspec is not None else 0


def beyond(items: list, turns: int) -> list:
    """The collected tests of turns past the ``turns`` the selected sizes need."""
    return [item for item in items if turn_of(item) >= turns]


__all__ = ["FIXTURE", "beyond", "plan", "room", "turn_of"]
