"""Fresh inputs for every call, in grader-owned memory the sandbox can see but not keep.

Each call gets new random values made by the environment from (size, seed), timed calls
included: caching by pointer, shape or sampled content then returns a stale answer, and
the answer is checked. Seeds come from ``(grade seed, test id, call number)`` so that a
local run reproduces from its printed seed whatever worker ran the test; a sealed grade
draws its seed from the OS and never shows it.

Inputs reach the sandbox through a ring of two *slots* per sandbox: shared tensors the
grader fills right before the call that uses them. Call n+1's values are not written
until call n has returned, so no call can see (and batch) the inputs of a later one.
The grader keeps its own pristine copy of every input: the reference is computed from it
and the slot is compared with it after the call to catch mutation.
"""

from __future__ import annotations

import secrets
import zlib
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from pytest_nodus import transport
from pytest_nodus.correctness import poison_

RING = 2


def fresh_grade_seed() -> int:
    return secrets.randbits(63)


def call_seed(grade_seed: int, label: str, call_number: int) -> int:
    state = np.random.SeedSequence([grade_seed, zlib.crc32(label.encode()), call_number]).generate_state(2)
    return int(state[0]) << 32 | int(state[1])


def make_inputs(env, dims, seed: int, device: torch.device) -> dict[str, Any]:
    generator = torch.Generator(device=device).manual_seed(seed & ((1 << 63) - 1))
    return env.make_inputs(dims, generator, device)


@dataclass
class Slot:
    inputs: dict[str, torch.Tensor] = field(default_factory=dict)
    receipts: list[torch.Tensor] = field(default_factory=list)


class SlotRing:
    """The slots one sandbox uses for one size."""

    def __init__(self, sandbox, env, dims, device: torch.device):
        self.sandbox = sandbox
        self.env = env
        self.dims = dims
        self.device = device
        self.slots: list[Slot | None] = [None] * RING
        self.calls = 0
        self._files = 0

    def _shared(self, shape, dtype) -> tuple[torch.Tensor, Any]:
        if self.device.type == "cpu":
            self._files += 1
            return transport.share_cpu_tensor(self.sandbox.scratch, f"shared-{self._files}.bin", shape, dtype)
        tensor = torch.empty(shape, dtype=dtype, device=self.device)
        return tensor, transport.describe_cuda_tensor(tensor)

    def prepare(self, fresh: dict[str, Any], timeout_s: float) -> tuple[int, Slot]:
        """Copy ``fresh`` into the next slot (binding it if shapes changed); poison receipts."""
        index = self.calls % RING
        self.calls += 1
        slot = self.slots[index]
        tensors = {k: v for k, v in fresh.items() if isinstance(v, torch.Tensor)}
        if slot is None or any(slot.inputs[k].shape != v.shape or slot.inputs[k].dtype != v.dtype
                               for k, v in tensors.items()):
            slot = self._bind(index, tensors, timeout_s)
        for name, value in tensors.items():
            slot.inputs[name].copy_(value)
        for receipt in slot.receipts:
            poison_(receipt)
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)  # the sandbox reads from another context
        return index, slot

    def _bind(self, index: int, tensors: dict[str, torch.Tensor], timeout_s: float) -> Slot:
        slot = Slot()
        descriptions = {}
        for name, value in tensors.items():
            slot.inputs[name], descriptions[name] = self._shared(tuple(value.shape), value.dtype)
        receipt_descriptions, outputs = [], []
        for spec in self.env.contract.outputs:
            shape = spec.concrete_shape(self.dims)
            receipt, description = self._shared(shape, spec.torch_dtype)
            slot.receipts.append(receipt)
            receipt_descriptions.append(description)
            outputs.append((list(shape), spec.dtype))
        self.sandbox.request({"op": "bind", "slot": index, "inputs": descriptions,
                              "receipts": receipt_descriptions, "outputs": outputs}, timeout_s)
        self.slots[index] = slot
        return slot
