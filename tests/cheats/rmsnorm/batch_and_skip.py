"""Cheat: batch ahead. Reach through the input's storage to the other input slot, compute its
answer during this call, and return that answer next call without working (batch-and-skip)."""

# Verdict per device kind: (status, flags of which at least one is raised), reward at the floor.
# The answer it returns was computed from whatever lay in the other slot: another call's
# inputs (wrong values) or, where no call had written there yet, the grader's NaN poison
# (non-finite values), depending on which size the grade calls it at first.
EXPECT = {"cpu": ("wrong", ("wrong_values", "non_finite_output")),
          "cuda": ("wrong", ("wrong_values", "non_finite_output"))}

import gc

import torch

_ahead = {}
_arena = []  # found once: a gc walk per call would cost more than the work it skips


def _rmsnorm(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


def _arena_bytes(storage):
    """The grader's input arena: the whole shared storage on the CPU. On the GPU the output
    heap and the flag words lie past it, so the arena ends where the heap (found through gc)
    begins."""
    for obj in gc.get_objects():
        if type(obj).__name__ == "OutputHeap" and hasattr(obj, "lo"):
            return obj.lo - storage.data_ptr()
    return storage.nbytes()


def kernel(x, weight, eps):
    key = (x.data_ptr(), tuple(x.shape))
    answer = _ahead.pop(key, None)
    storage = x.untyped_storage()
    if not _arena:
        _arena.append(_arena_bytes(storage))
    half = _arena[0] // 2 // 1024 * 1024
    offset_bytes = x.data_ptr() - storage.data_ptr()
    other = (offset_bytes + half) % (2 * half)
    if other + x.numel() * 2 <= 2 * half:
        # What lies there now is whatever the grader will call next (it hopes).
        nxt = torch.empty(0, dtype=x.dtype, device=x.device).set_(storage, other // 2, x.shape)
        _ahead[(storage.data_ptr() + other, tuple(x.shape))] = _rmsnorm(nxt, weight, eps)
    return answer if answer is not None else _rmsnorm(x, weight, eps)
