"""An arena holds every size the fuzz could draw where the environment's domain keeps them
small (the CPU domains), so a fuzzed size never restarts the sandboxes; where the domain
runs to GBs (the GPU's), the arena stays sized by the planned sizes."""

from __future__ import annotations

import itertools

from hypothesis import given, settings

from env_suites.chunked_prefill.environment import ENVIRONMENT as PREFILL
from pytest_nodus.grader import devices
from pytest_nodus.grader.fuzz import size_strategy
from pytest_nodus.grader.sandbox_pool import FUZZ_ROOM_BYTES, SandboxPool

CPU = devices.Device("cpu", None, "cpu", None)
CUDA = devices.Device("cuda", 0, "cuda:0", None)


def _capacity(device, kind: str, dims) -> int:
    pool = SandboxPool("kernel.py", device, audit=True, expert_cache=None, trusted=False)
    pool.planned_dims = {PREFILL.name: list(PREFILL.profile(kind).sizes)}
    return pool._arena_capacity(PREFILL, dims)


def test_a_cpu_arena_holds_the_largest_call_at_every_corner():
    capacity = _capacity(CPU, "cpu", PREFILL.profile("cpu").sizes[0])
    for corner in PREFILL.profile("cpu").domain.corners():
        assert capacity >= 2 * PREFILL.contract.call_bytes(corner), corner


@settings(max_examples=50, deadline=None)
@given(size_strategy(PREFILL.profile("cpu").domain))
def test_a_cpu_arena_holds_every_fuzzed_size(dims):
    planned = PREFILL.profile("cpu").sizes[0]
    assert _capacity(CPU, "cpu", planned) >= 2 * PREFILL.contract.call_bytes(dims)


def test_a_gpu_arena_keeps_the_planned_size():
    planned = PREFILL.profile("cuda").sizes
    largest = max(PREFILL.contract.call_bytes(d) for d in planned)
    assert max(PREFILL.contract.call_bytes(d) for d in PREFILL.profile("cuda").domain.corners()) > FUZZ_ROOM_BYTES
    assert _capacity(CUDA, "cuda", planned[0]) < 3 * largest


def test_the_corners_are_every_end_of_every_dim():
    corners = PREFILL.profile("cpu").domain.corners()
    dims = PREFILL.profile("cpu").domain.dims
    assert len(corners) == len({tuple(sorted(c.items())) for c in corners})
    for name in dims:
        assert len({c[name] for c in corners}) in (1, 2)
    assert len(corners) == len(list(itertools.product(*({c[n] for c in corners} for n in dims))))
