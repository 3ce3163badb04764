"""pytest_nodus.WarmGrader: each grade forked from a warm process, its sandboxes spawned ahead
(grader/prefork.py), gives the grade a fresh process gives (pytest_nodus.grade): the same
verdicts and flags, the same schema, and a seed of its own, drawn in its own fork."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import CHEATS, REPO

from pytest_nodus import FLOOR, WarmGrader, grade
from pytest_nodus.grader.report import SCHEMA_PATH

pytestmark = pytest.mark.grade

SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"
STARTING = REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"
SEALED = REPO / "sealed_fixtures"


def verdict(g):
    return g.status, g.reward, sorted({f.code for f in g.flags}), [(s.id, s.status) for s in g.sizes]


def test_warm_grades_give_the_fresh_verdicts():
    attempts = [SOLUTION, CHEATS / "rmsnorm" / "return_input.py", STARTING]
    with WarmGrader(device="cpu") as warm:
        grades = [warm.grade("rmsnorm", a, sealed=SEALED, pytest_args=["-k", "public or hidden"]) for a in attempts]
    fresh = [grade("rmsnorm", a, sealed=SEALED, device="cpu", pytest_args=["-k", "public or hidden"])
             for a in attempts]
    assert [verdict(g) for g in grades] == [verdict(g) for g in fresh]
    assert grades[0].correct and grades[1].reward == FLOOR and grades[2].correct
    assert [g.exit_status for g in grades] == [g.exit_status for g in fresh] == [0, 1, 0]
    schema = json.loads(SCHEMA_PATH.read_text())
    for g in grades:
        jsonschema.validate(g.document, schema)
        assert "pytest-nodus grade" in g.output


def test_each_warm_grade_draws_its_own_seed():
    # Forks share their parent's memory: a seed drawn from state copied into every fork would
    # repeat across grades, and with it every input.
    with WarmGrader(device="cpu") as warm:
        seeds = [warm.grade("rmsnorm", SOLUTION, pytest_args=["-k", "public-0"]).document["seed"] for _ in range(3)]
    assert len(set(seeds)) == 3, seeds
