"""Grades sharing a GPU reserve their memory in a ledger before they start
(grader/gpu_ledger.py): a grade whose need does not fit beside the others waits, a grader
that died gives its reservation back, and a grade alone on the GPU always starts."""

import os

import pytest

from pytest_nodus.grader import gpu_ledger
from pytest_nodus.grader.devices import DeviceBusy
from pytest_nodus.grader.gpu_ledger import GIB, Ledger, need_bytes

OTHER, DEAD = 1 << 22, (1 << 22) + 1  # pids standing for other graders: one alive, one gone


@pytest.fixture(autouse=True)
def live_pids(monkeypatch):
    monkeypatch.setattr(gpu_ledger, "_alive", lambda pid: pid in (os.getpid(), OTHER))


@pytest.fixture
def other_grader():
    return OTHER


def test_a_grade_that_does_not_fit_beside_another_waits_until_it_is_released(tmp_path, other_grader):
    ledger = Ledger("gpu0", capacity=100 * GIB, directory=tmp_path)
    assert ledger.try_reserve(70 * GIB, pid=other_grader)
    assert not ledger.try_reserve(40 * GIB)
    assert ledger.try_reserve(30 * GIB)  # what is left still fits
    ledger.release()
    ledger.release(pid=other_grader)
    assert ledger.try_reserve(40 * GIB)
    assert ledger.held() == {os.getpid(): 40 * GIB}


def test_a_dead_graders_reservation_is_dropped(tmp_path):
    ledger = Ledger("gpu0", capacity=100 * GIB, directory=tmp_path)
    ledger.path.write_text(f'{{"{DEAD}": {90 * GIB}}}')  # written while that grader lived
    assert ledger.try_reserve(90 * GIB)  # its 90 GiB are not counted
    assert DEAD not in ledger.held()


def test_a_grade_alone_on_the_gpu_starts_whatever_it_needs(tmp_path):
    ledger = Ledger("gpu0", capacity=100 * GIB, directory=tmp_path)
    assert ledger.try_reserve(150 * GIB)


def test_a_wait_past_its_limit_is_a_busy_gpu_that_says_who_holds_it(tmp_path, other_grader):
    ledger = Ledger("gpu0", capacity=100 * GIB, directory=tmp_path)
    ledger.try_reserve(80 * GIB, pid=other_grader)
    with pytest.raises(DeviceBusy, match=r"other grades reserve 80.0 of 100.0 GiB"):
        ledger.reserve(30 * GIB, wait_s=0.2)


def test_a_torn_ledger_file_is_started_over(tmp_path):
    ledger = Ledger("gpu0", capacity=100 * GIB, directory=tmp_path)
    ledger.path.write_text("{not json")
    assert ledger.try_reserve(10 * GIB)


def test_the_need_grows_with_the_call_and_the_published_budget():
    small, large = need_bytes(1 << 20, 2 * GIB), need_bytes(1 << 30, 2 * GIB)
    assert large - small == 12 * ((1 << 30) - (1 << 20))  # the grader's 4 calls and both sandboxes' 8
    assert need_bytes(1 << 20, 16 * GIB) - small == 2 * 14 * GIB  # the expert and the submission


def test_a_gpu_grade_reserves_its_largest_size_before_it_runs_and_gives_it_back(tmp_path, monkeypatch):
    from env_suites.attention_backward.environment import ENVIRONMENT
    from pytest_nodus.grader import devices
    from pytest_nodus.grader.grading import Grader
    from pytest_nodus.grader.results import SizeResult

    ledger = Ledger("gpu0", capacity=1000 * GIB, directory=tmp_path)
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: ledger)
    grader = Grader(tmp_path / "k.py", devices.Device("cuda", 0, "no GPU needed: nothing launches", None), grade_seed=1)
    small, large = ENVIRONMENT.profile("cuda").sizes[0], ENVIRONMENT.profile("cuda").sizes[2]
    grader.pool.planned_dims[ENVIRONMENT.name] = [small, large]
    result = SizeResult("public-0", "public", 0, dict(small))
    grader.reserve(ENVIRONMENT, small, result)
    need = need_bytes(ENVIRONMENT.contract.call_bytes(large), 16 * GIB)  # the largest planned size, not this one
    assert ledger.held() == {os.getpid(): need}
    assert result.gpu_reserved_gib == round(need / GIB, 2)
    grader.close()
    assert ledger.held() == {}


def test_a_batch_reserves_a_sandbox_per_attempt():
    one, three = need_bytes(1 << 30, 2 * GIB), need_bytes(1 << 30, 2 * GIB, submissions=3)
    # Each further attempt: its arena and heap (4 calls), its context and its published budget.
    assert three - one == 2 * (4 * (1 << 30) + gpu_ledger.CONTEXT_BYTES + 2 * GIB)
