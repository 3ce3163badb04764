"""Fresh inputs for every call, placed in grader-owned memory the sandbox can see.

Each call gets new random values made by the environment from (size, seed), timed calls
included: caching by pointer, shape or sampled content then returns a stale answer, and
the answer is checked. Seeds come from ``(grade seed, test id, call number)`` so that a
local run reproduces from its printed seed whatever worker ran the test; a sealed grade
draws its seed from the OS and never shows it.

Inputs and output receipts of a call are placed in one half of the sandbox's arena, the
halves alternating, so consecutive calls never overlap and addresses repeat every other
call with new values in them: a cache keyed on pointers (or a replayed CUDA graph) hits
and returns a stale answer, which verification then catches. A call's values are written
into the arena only once the grader's clock has started for it (``grader/clock.py``),
so no call can see, and batch, the inputs of a later one, and no work on them can start
before they are timed. The grader keeps its own pristine copy of every input: the
reference is computed from it, and the arena copy is compared with it after the call to
catch mutation. Receipts are poisoned with NaN before every call.
"""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from pytest_nodus.grader import exact_products
from pytest_nodus.grader.devices import settle
from pytest_nodus.shared import arena as layout


def fresh_grade_seed() -> int:
    return secrets.randbits(63)


def call_seed(grade_seed: int, label: str, call_number: int) -> int:
    state = np.random.SeedSequence([grade_seed, zlib.crc32(label.encode()), call_number]).generate_state(2)
    return int(state[0]) << 32 | int(state[1])


def make_inputs(env, dims, seed: int, device: torch.device) -> dict[str, Any]:
    generator = torch.Generator(device=device).manual_seed(seed & ((1 << 63) - 1))
    fresh = env.make_inputs(dims, generator, device)
    settle(device)
    return fresh


def reference(env, fresh: dict[str, Any], device: torch.device | str, result=None):
    """The environment's reference outputs for ``fresh``, their GPU work finished (see settle);
    ``result`` (a SizeResult) records which cross-checked path answered."""
    exact_products.answered()  # what answered before this call is not this size's
    references = env.reference(fresh)
    settle(device)
    if result is not None:
        result.note_reference(exact_products.answered())
    return references


class ArenaTooSmall(Exception):
    """This call does not fit twice in the arena: the sandbox needs a bigger one."""


@dataclass
class Placement:
    inputs: dict[str, torch.Tensor]  # grader-side views of the arena, not yet written
    receipts: list[torch.Tensor]
    layout: dict[str, Any]  # what the sandbox needs to build the same views

    def copies(self, fresh: dict[str, Any]) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """(arena view, pristine input) pairs, for the clock to write inside its window."""
        return [(view, fresh[name]) for name, view in self.inputs.items()]

    def write_now(self, fresh: dict[str, Any]) -> None:
        """Write the inputs ahead of the call: for a trusted file's untimed ``prepare``, and
        for a warm call (grader/warm_up.py), which has no window to write them in."""
        for view, pristine in self.copies(fresh):
            view.copy_(pristine)
        if self.receipts and self.receipts[0].device.type == "cuda":
            torch.cuda.synchronize(self.receipts[0].device)  # the sandbox reads from another context


class ArenaPlacer:
    def __init__(self, arena: torch.Tensor):
        self.arena = arena
        self.calls = 0

    @property
    def capacity(self) -> int:
        return self.arena.numel()

    def place(self, fresh: dict[str, Any], outputs: list[tuple[tuple[int, ...], str]]) -> Placement:
        tensors = {k: v for k, v in fresh.items() if isinstance(v, torch.Tensor)}
        need = sum(layout.aligned(layout.tensor_nbytes(t.shape, t.dtype)) for t in tensors.values())
        need += sum(layout.aligned(layout.tensor_nbytes(s, d)) for s, d in outputs)
        half = (self.capacity // 2) // layout.ALIGN * layout.ALIGN
        if need > half:
            raise ArenaTooSmall(need)
        offset = half * (self.calls % 2)
        self.calls += 1
        views, layout_inputs = {}, {}
        for name, value in tensors.items():
            dtype = str(value.dtype).removeprefix("torch.")
            views[name] = layout.arena_view(self.arena, offset, tuple(value.shape), dtype)
            layout_inputs[name] = [offset, list(value.shape), dtype]
            offset += layout.aligned(layout.tensor_nbytes(value.shape, value.dtype))
        receipts, layout_receipts = [], []
        for shape, dtype in outputs:
            receipt = layout.arena_view(self.arena, offset, shape, dtype)
            receipts.append(receipt)
            layout_receipts.append([offset, list(shape), dtype])
            offset += layout.aligned(layout.tensor_nbytes(shape, dtype))
        return Placement(views, receipts, {"inputs": layout_inputs, "receipts": layout_receipts})

