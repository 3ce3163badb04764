"""``Grader.take_turn``: the sandboxes of attempts leaving the batch's turn are killed before
the next turn's start (their GPU memory is that turn's room); the expert's and those of
attempts staying are kept, and nothing is killed when the turn does not change."""

from pytest_nodus.grader.grading import Grader
from pytest_nodus.grader.roles import submission_roles


class FakePool:
    def __init__(self):
        self.retired = []

    def retire(self, leaving):
        self.retired.append(list(leaving))


def _grader(attempts: int) -> Grader:
    grader = Grader.__new__(Grader)  # no device or sandbox: only the turn's bookkeeping
    grader.roles = submission_roles(attempts)
    grader.active = list(grader.roles)
    grader.pool = FakePool()
    return grader


def test_the_next_turn_kills_the_last_turns_attempts_only():
    grader = _grader(5)
    grader.take_turn([0, 1, 2])
    assert grader.pool.retired == [["submission:3", "submission:4"]]
    assert grader.active == ["submission:0", "submission:1", "submission:2"]
    grader.take_turn([0, 1, 2])  # the same turn's next test
    assert len(grader.pool.retired) == 1
    grader.take_turn([3, 4])
    assert grader.pool.retired[-1] == ["submission:0", "submission:1", "submission:2"]
    assert grader.active == ["submission:3", "submission:4"]


class FakeSandbox:
    def __init__(self):
        self.calls = []

    def stop(self):
        self.calls.append("stop")

    def close(self):
        self.calls.append("close")


def test_the_pool_stops_and_closes_the_leaving_roles_sandboxes_only():
    from pytest_nodus.grader.sandbox_pool import SandboxPool

    pool = SandboxPool.__new__(SandboxPool)
    leaving, launched, staying, expert = FakeSandbox(), FakeSandbox(), FakeSandbox(), FakeSandbox()
    pool._sandboxes = {("submission:0", "rmsnorm"): leaving, ("submission:1", "rmsnorm"): staying,
                       ("expert", "rmsnorm"): expert}
    pool._launched = {("submission:0", "axpy"): launched}
    pool._placers = {key: object() for key in pool._sandboxes}
    pool.retire(["submission:0"])
    assert leaving.calls == launched.calls == ["stop", "close"]
    assert staying.calls == expert.calls == []
    assert set(pool._sandboxes) == {("submission:1", "rmsnorm"), ("expert", "rmsnorm")} and not pool._launched
    assert set(pool._placers) == set(pool._sandboxes)
