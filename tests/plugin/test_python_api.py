"""pytest_nodus.grade: the same grade as the command line, typed, for pipelines."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import CHEATS, REPO

from pytest_nodus import FLOOR, Grade, GradeFailed, grade
from pytest_nodus.grader.report import SCHEMA_PATH

pytestmark = pytest.mark.grade

SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_a_grade_comes_back_typed_with_its_json():
    g = grade("rmsnorm", SOLUTION, sealed=REPO / "sealed_fixtures", device="cpu")
    jsonschema.validate(g.document, json.loads(SCHEMA_PATH.read_text()))
    assert isinstance(g, Grade) and g.correct and g.exit_status == 0 and g.sealed
    assert g.reward is None and g.reward_basis == "cpu_check" and g.speedup == g.document["speedup"]
    assert [s.id for s in g.sizes] == [s["id"] for s in g.document["sizes"]]
    assert {s.kind for s in g.sizes} == {"public", "hidden", "fuzz"}
    assert "pytest-nodus grade" in g.output


@pytest.mark.parametrize("one_run", [True, False], ids=["batch", "one_by_one"])
def test_several_submissions_give_one_grade_each(one_run):
    cheat, honest = CHEATS / "rmsnorm" / "return_input.py", REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"
    grades = grade(REPO / "env_suites" / "rmsnorm", [cheat, honest], device="cpu", pytest_args=["-k", "public"],
                   one_run=one_run)
    assert [g.submission.name for g in grades] == ["return_input.py", "starting_kernel.py"]
    assert grades[0].reward == FLOOR and "output_aliases_input" in {f.code for f in grades[0].flags}
    assert grades[1].correct
    # A batch is one pytest run: its exit status is 0 only when every attempt is correct.
    assert grades[1].exit_status == (1 if one_run else 0)


def test_a_usage_error_is_raised_with_pytests_words(tmp_path):
    with pytest.raises(GradeFailed, match="--nodus-against must be"):
        grade("rmsnorm", SOLUTION, device="cpu", against="the_moon")
    with pytest.raises(ValueError, match="no environment 'nothing'"):
        grade("nothing", SOLUTION)
