"""``nodus-recount --rounds K`` counts each timed size on its first K timed calls per role, in
the order their rounds ran: what the grade would have read with K timed rounds."""

from __future__ import annotations

import json

import pytest
from conftest import REPO
from pytest_nodus.commands import recount
from pytest_nodus.grader import timing

GRADE = REPO / "tests" / "data" / "h200_attention_solution.json"


def test_the_first_k_calls_of_every_role_are_counted():
    size = next(s for s in json.loads(GRADE.read_text())["sizes"] if s["timed_calls"])
    recorded = size["timed_calls"]
    counted = recount.calls_of(size, 3)
    assert set(counted) == set(recorded)
    for role, calls in counted.items():
        assert calls == [timing.CallTimes.from_json(c) for c in recorded[role][:3]]


def test_all_the_rounds_recorded_count_as_the_grade_did():
    rounds = max(len(calls) for s in json.loads(GRADE.read_text())["sizes"] if s["timed_calls"]
                 for calls in s["timed_calls"].values())
    assert recount.recount(GRADE, rounds) == recount.recount(GRADE)
    assert recount.recount(GRADE, 3) != recount.recount(GRADE)  # three of ten read other medians


def test_fewer_than_one_round_is_refused(capsys):
    with pytest.raises(SystemExit) as stop:
        recount.main(["--rounds", "0", str(GRADE)])
    assert stop.value.code == 2 and "--rounds must be at least 1" in capsys.readouterr().err
