"""The fuzz runs before the timed sizes and calls no expert, so the expert's sandbox is
launched as the fuzz begins, sized for the timed sizes, and never called there; not where no
timed size follows (``expert_beside_fuzz`` off: -k fuzz, --nodus-fail-fast)."""

from __future__ import annotations

from pytest_nodus.grader import devices, fuzzed_call
from env_suites.rmsnorm.environment import ENVIRONMENT

DIMS = {"M": 4, "N": 8}
PLANNED = [{"M": 64, "N": 256}, {"M": 33, "N": 1000}]


class _Sandbox:
    isolation, removed_fatbins = ["process"], 0

    def finish(self, timeout):
        return {"flags": []}

    def rest(self):
        pass


class _Pool:
    def __init__(self):
        self.launched, self.planned_dims = [], {ENVIRONMENT.name: PLANNED}

    def launch(self, env, role, dims):
        self.launched.append((role, dims))

    def get(self, env, role, dims, spent):
        assert role != "expert", "the fuzz calls no expert"
        return _Sandbox()


class _Grader:
    def __init__(self, beside: bool):
        self.device = devices.Device("cpu", None, "cpu", None)
        self.gpu_wait_s, self.grade_seed, self.trusted, self.torch_device = 0, 7, False, "cpu"
        self.roles, self.pool, self.hung, self.called = ["submission"], _Pool(), {}, []
        self.expert_beside_fuzz = beside

    def reserve(self, env, dims, result):
        pass

    def timeout(self, env):
        return 1.0

    def charge_load(self, sandbox, role):
        pass

    def charge_leftovers(self, sandbox, role):
        pass

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
