"""The fuzz runs before the timed sizes and calls no expert, so the expert's sandbox is
launched as the fuzz begins, sized for the timed sizes, and never called there; not where no
timed size follows (``expert_beside_fuzz`` off: -k fuzz, --nodus-fail-fast)."""

from __future__ import annotations

from conftest import FuzzGrader, FuzzSandbox
from pytest_nodus.grader import fuzzed_call
from env_suites.rmsnorm.environment import ENVIRONMENT

DIMS = {"M": 4, "N": 8}
PLANNED = [{"M": 64, "N": 256}, {"M": 33, "N": 1000}]


class _Pool:
    def __init__(self):
        self.launched, self.planned_dims = [], {ENVIRONMENT.name: PLANNED}

    def launch(self, env, role, dims):
        self.launched.append((role, dims))

    def get(self, env, role, dims, spent):
        assert role != "expert", "the fuzz calls no expert"
        return FuzzSandbox()


class _Grader(FuzzGrader):
    def __init__(self, beside: bool):
        super().__init__(["submission"])
        self.pool, self.called, self.expert_beside_fuzz = _Pool(), [], beside

    def call(self, env, sandbox, dims, fresh, references, result, role, timed):
        self.called.append(role)
        return None, references


def test_the_expert_is_launched_first_for_the_timed_sizes_and_not_called():
    grader = _Grader(beside=True)
    [result] = fuzzed_call.check(grader, ENVIRONMENT, DIMS, "label", 0, 0, grader.roles)
    assert grader.pool.launched == [("expert", PLANNED[0]), ("submission", DIMS)]
    assert grader.called == ["submission"] and result.status == "correct"


def test_no_expert_where_no_timed_size_follows():
    grader = _Grader(beside=False)
    fuzzed_call.check(grader, ENVIRONMENT, DIMS, "label", 0, 0, grader.roles)
    assert [role for role, _ in grader.pool.launched] == ["submission"]
