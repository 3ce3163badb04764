"""An environment that declares what its expert was measured to hold (``expert_memory_gib``)
has the grade reserve that for the expert's sandbox instead of the submissions' budget, and
the GPU memory wall hold the expert to it: the room freed goes to a batch's attempts, and an
expert past its figure cannot eat it. Without a figure the expert is reserved the budget, as
before, and no wall is raised on it (unmeasured)."""

import dataclasses
import os

from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
from pytest_nodus.grader import gpu_ledger, roles
from pytest_nodus.grader.gpu_ledger import GIB, Ledger, batch_room, need_bytes
from pytest_nodus.grader.sandbox_pool import gpu_budget

H100, H200 = 79 * GIB, 140 * GIB


def with_expert_memory(gib):
    profile = dataclasses.replace(ATTENTION.profile("cuda"), expert_memory_gib=gib)
    return dataclasses.replace(ATTENTION, profiles={**ATTENTION.profiles, "cuda": profile})


def test_the_expert_is_reserved_its_own_figure_and_each_attempt_the_budget():
    call, budget = 1 << 30, 16 * GIB
    assert need_bytes(call, budget, 3, expert_bytes=4 * GIB) == need_bytes(call, budget, 3) - 12 * GIB
    assert need_bytes(call, budget, 3, expert_bytes=None) == need_bytes(call, budget, 3)


def test_a_measured_expert_leaves_a_batch_more_room_at_attentions_sizes():
    planned = list(ATTENTION.profile("cuda").sizes)
    call = max(ATTENTION.contract.call_bytes(d) for d in planned)
    budget = int(ATTENTION.profile("cuda").memory_gib * GIB)
    for capacity in (H100, H200):
        unmeasured = batch_room(call, budget, capacity)
        measured = batch_room(call, budget, capacity, expert_bytes=2 * GIB)
        assert measured == unmeasured + 1  # the 14 GiB freed, less than one attempt's 27
        assert need_bytes(call, budget, measured, 2 * GIB) <= capacity < need_bytes(call, budget, measured + 1, 2 * GIB)


def test_the_wall_holds_submissions_to_the_budget_and_the_expert_to_its_figure():
    measured, unmeasured = with_expert_memory(3.5).profile("cuda"), ATTENTION.profile("cuda")
    for profile in (measured, unmeasured):
        for role in ("submission", "submission:2"):
            assert gpu_budget(profile, role, roles.process_role(role)) == int(profile.memory_gib * GIB)
        assert gpu_budget(profile, "baseline:flex", roles.process_role("baseline:flex")) is None
    assert gpu_budget(measured, "expert", "expert") == int(3.5 * GIB)
    assert gpu_budget(unmeasured, "expert", "expert") is None


def test_a_grade_reserves_the_declared_expert_figure(tmp_path, monkeypatch):
    from pytest_nodus.grader import devices
    from pytest_nodus.grader.grading import Grader
    from pytest_nodus.grader.results import SizeResult

    env = with_expert_memory(3.0)
    ledger = Ledger("gpu0", capacity=1000 * GIB, directory=tmp_path)
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: ledger)
    grader = Grader(tmp_path / "k.py", devices.Device("cuda", 0, "no GPU needed: nothing launches", None), grade_seed=1)
    size = env.profile("cuda").sizes[0]
    grader.reserve(env, size, SizeResult("public-0", "public", 0, dict(size)))
    call = env.contract.call_bytes(size)
    assert ledger.held() == {os.getpid(): need_bytes(call, 16 * GIB, 1, 3 * GIB)}
    assert ledger.held()[os.getpid()] == need_bytes(call, 16 * GIB) - 13 * GIB
    grader.close()
