"""A local grade shrinks an attempt's failure once: every later failing public size names the
smallest failing size already found, without new trial calls (each trial of a crashing
kernel restarts its sandbox), and the time the shrink took is its size's ``shrink`` phase."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_nodus.grader.environment import IntRange, SizeDomain
from pytest_nodus.grader.results import SizeResult
from pytest_nodus.grader.suite import GradeRunner

DOMAIN = SizeDomain({"M": IntRange(1, 4096), "N": IntRange(1, 4096)})


class FailingGrader:
    """Two attempts: the first wrong wherever M * N >= 64, the second always correct."""

    def __init__(self):
        self.roles = ["submission", "submission:1"]
        self.device = SimpleNamespace(kind="cpu")
        self.smallest_failing: dict = {}
        self.trials = 0
        self.pool = SimpleNamespace(submissions={role: SimpleNamespace(name=f"{role}.py") for role in self.roles})

    def take_turn(self, attempts):
        assert attempts == [0, 1]  # a batch that fits: one turn of both

    def grade_size(self, env, size, nodeid, rerun):
        wrong = SizeResult(id=size.id, kind=size.kind, rerun=rerun, dims=dict(size.dims), status="wrong",
                           flags=[{"size": size.id, "code": "wrong_values", "detail": "off"}])
        return [wrong, SizeResult(id=size.id, kind=size.kind, rerun=rerun, dims=dict(size.dims))]

    def check_fuzzed(self, env, dims, label, example, rerun, attempts):
        self.trials += 1
        wrong = dims["M"] * dims["N"] >= 64
        return [SizeResult(id="fuzz", kind="fuzz", rerun=rerun, dims=dims, status="wrong" if wrong else "correct")]


def _grade(runner, size_id, dims):
    size = SimpleNamespace(id=size_id, kind="public", dims=dims)
    env = SimpleNamespace(profile=lambda kind: SimpleNamespace(domain=DOMAIN))
    with pytest.raises(pytest.fail.Exception):  # the first attempt is wrong: the test fails
        return runner.grade_size(env, size, 0)


def _runner(grader):
    node = SimpleNamespace(nodeid="suite::test_size", user_properties=[], session=SimpleNamespace())
    return GradeRunner(grader, node, SimpleNamespace(sealed=False))


def test_the_second_failing_size_reuses_the_first_shrink():
    grader = FailingGrader()
    _grade(_runner(grader), "public-0", {"M": 4096, "N": 4096})
    first_trials = grader.trials
    assert first_trials > 0
    runner = _runner(grader)
    _grade(runner, "public-1", {"M": 2048, "N": 1024})
    assert grader.trials == first_trials  # no trial call at the second size
    node_results = [payload for name, payload in runner.node.user_properties]
    wrong, correct = node_results
    smallest = grader.smallest_failing["submission"]
    assert smallest["M"] * smallest["N"] < 4096 * 4096
    assert {"size": "public-1", "code": "smallest_failing_size",
            "detail": f"also fails at {smallest} (shrunk)"} in wrong["flags"]
    assert "shrink" in wrong["phases"] and "shrink" not in correct["phases"]
