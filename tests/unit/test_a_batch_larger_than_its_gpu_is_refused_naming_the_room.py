"""A batch holds every attempt's sandbox at once. One whose reservation is larger than its GPU
would wait for memory its own sandboxes hold (to the end of ``--nodus-gpu-wait``, with no
output), so it is refused before the first size, naming how many attempts fit per run."""

from types import SimpleNamespace

import pytest

from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
from pytest_nodus.grader import batch_files, gpu_ledger
from pytest_nodus.grader.gpu_ledger import GIB, Ledger, batch_problem, batch_room, need_bytes

H200 = 140 * GIB  # about what torch reports as the H200's total memory


@pytest.mark.parametrize("call_gib, budget_gib, capacity_gib", [(2.5, 16, 140), (0.01, 1, 80), (30, 16, 40)])
def test_the_room_is_the_most_attempts_whose_reservation_fits(call_gib, budget_gib, capacity_gib):
    call, budget, capacity = int(call_gib * GIB), int(budget_gib * GIB), capacity_gib * GIB
    room = batch_room(call, budget, capacity)
    assert room >= 1
    assert need_bytes(call, budget, room + 1) > capacity
    assert room == 1 or need_bytes(call, budget, room) <= capacity


def test_sixteen_attention_attempts_on_an_h200_are_refused_with_the_room_named(monkeypatch):
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: Ledger("gpu0", capacity=H200))
    cuda = SimpleNamespace(kind="cuda")
    planned = list(ATTENTION.profile("cuda").sizes)
    problem = batch_problem(ATTENTION, planned, 16, cuda)
    assert problem is not None and "16 attempts" in problem
    room = batch_files.room_in(problem)
    call = max(ATTENTION.contract.call_bytes(d) for d in planned)
    assert room == batch_room(call, int(ATTENTION.profile("cuda").memory_gib * GIB), H200) == 3
    assert batch_problem(ATTENTION, planned, room, cuda) is None  # a batch of that many runs


def test_a_cpu_batch_and_a_lone_grade_are_never_refused(monkeypatch):
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: Ledger("gpu0", capacity=1))
    planned = list(ATTENTION.profile("cuda").sizes)
    assert batch_problem(ATTENTION, planned, 16, SimpleNamespace(kind="cpu")) is None
    assert batch_problem(ATTENTION, planned, 1, SimpleNamespace(kind="cuda")) is None
