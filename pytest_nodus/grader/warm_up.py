"""A batch's set-ups at a size side by side, before its rounds (``--nodus-warm-together``).

A submission's first call at a size is mostly set-up: its compiles and autotuning
(docs/throughput.md: where a grade's time goes). In the rounds every call runs with every
other sandbox frozen, so a batch's attempts compile one after another. Here each attempt runs
once on the same fresh inputs, all at once (``protocol.WARM``): untimed, its outputs dropped
unread. The rounds after it are unchanged, warm-up rounds included, and every call in them is
verified: a kernel that behaves otherwise in its warm call changes no verdict, and what it
can do there (run untimed on fresh inputs, inside the same walls) it can do in a warm-up
round already. What is new is that the attempts run at the same time: each on its own inputs
in its own arena, none timed, and each frozen again once it has answered.

- The expert never warms here. Its set-up (inductor's autotuning, the MoE expert's choice
  between eager and compiled) times candidates on the GPU, and it keeps what it chose: beside
  an attempt's warm call, that attempt could make the expert's choice for it. The expert's set-up
  stays its own first call in the first round, every other sandbox frozen and the GPU shown
  idle first (``grader/gpu_idle.py``: ``settle``).
- The price, and why the option is off by default: an attempt's own set-up shares the GPU with
  its batch-mates', so an autotuner's timings (and the configuration it keeps) can differ from
  those of the same attempt graded alone. Timed calls never overlap: the rounds are unchanged.
- GPU work the warm calls leave running is waited out before the rounds. Side by side, it is
  no one attempt's: past the wait (``gpu_idle.settle``) every warmed attempt loses the size
  as ``gpu_contended``, where a round's leftovers are charged to their maker alone.
- A submission's idle count is taken just before, as before any untimed call
  (``Grader.idle_check``): its warm call's helper threads and compiler processes are its
  call's, not work done between calls.
- A submission whose warm call dies or hangs has failed the size, with the code a call would
  give it (``crashed``, ``timeout``, ...): the caller takes it out of the rounds. One that
  raises is left to its first verified call to say so.
- The warm call takes an arena slot as a call does, so the calls after it alternate between
  the arena's halves from the other one: a cheat that returns memory it never wrote may find
  other stale bytes there (other flags, the same floor).

Timed sizes only: a fuzzed size is one verified call per role, with no rounds to warm for.
Runs only in the grader.
"""

from __future__ import annotations

import time

import torch

from pytest_nodus.grader import gpu_idle, inputs, phases
from pytest_nodus.grader.results import SizeResult
from pytest_nodus.grader.sandbox_process import Sandbox, SandboxFailure


def warm(grader, env, dims: dict, label: str, sandboxes: dict[str, Sandbox], results: dict[str, SizeResult],
         shared: SizeResult) -> dict[str, SandboxFailure]:
    """Run the submissions' warm calls at once; their failures, by role. The inputs are made
    into ``shared``'s phases, as a round's are."""
    with phases.timed(shared.phases, "inputs"):
        fresh = inputs.make_inputs(env, dims, inputs.call_seed(grader.grade_seed, label + "/warm", 0),
                                   grader.torch_device)
    outputs = [(spec.concrete_shape(dims), spec.dtype) for spec in env.contract.outputs]
    scalars = {k: v for k, v in fresh.items() if not isinstance(v, torch.Tensor)}
    order = [spec.name for spec in env.contract.inputs]
    started, failed = time.perf_counter(), {}
    running = []
    for role, sandbox in sandboxes.items():
        grader.idle_check(sandbox, results[role])
        slot = grader.pool.placer(role, env).place(fresh, outputs)
        slot.write_now(fresh)
        try:
            sandbox.warm(slot.layout, scalars, order)
            running.append((role, sandbox))
        except SandboxFailure as failure:
            failed[role] = failure
    for role, sandbox in running:
        try:
            # Each gets its first call's limit from the start of all: they run side by side.
            limit = grader.first_call_timeout(env, role)
            sandbox.warmed(max(1.0, limit - (time.perf_counter() - started)))
        except SandboxFailure as failure:
            failed[role] = failure
            continue
        sandbox.rest()
    if running:
        # What the warm calls left running on the GPU is waited out before the rounds; it cannot
        # be charged to one attempt (they ran side by side, unlike a round's calls:
        # Grader.charge_leftovers), so GPU work that outlasts the wait costs every warmed
        # attempt the size: the price of the option in a batch with such a cheat in it.
        step = gpu_idle.settle(running[0][1].clock.idle_step_ns)
        for role, _ in running if step else ():
            failed.setdefault(role, SandboxFailure("error", "gpu_contended",
                                                   f"GPU work left by the batch's warm calls held the GPU for "
                                                   f"{gpu_idle.SETTLE_S:.0f} s (a step of {step / 1e6:.2f} ms)"))
    wall_ms = 1e3 * (time.perf_counter() - started)
    for role in sandboxes:
        phases.add(results[role].phases, "warm", wall_ms)
    return failed
