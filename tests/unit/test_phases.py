"""Where a grade's time goes: a sandbox's start-up stages from its marks, and the grade's phases
added up from its sizes'."""

from __future__ import annotations

import time

import pytest

from pytest_nodus.grader import phases


def test_stages_are_the_steps_between_ordered_marks():
    marks = [["process", 10.5], ["context", 10.6], ["removal", 10.6], ["arena", 10.8], ["confinement", 10.85]]
    stages = phases.stages(10.0, marks, staged_at=10.9, hello_at=11.2)
    assert stages == pytest.approx({"start_process": 500, "start_context": 100, "start_removal": 0,
                                    "start_arena": 200, "start_confinement": 50, "start_load": 300})


@pytest.mark.parametrize("marks", [
    [["process", 10.5], ["context", 10.4]],  # backwards
    [["process", 9.0]],  # before the spawn
    [["process", 12.0]],  # after the staged message arrived
    [["elsewhere", 10.5]],  # not a stage
    "not a list",
])
def test_marks_out_of_order_give_no_stages(marks):
    assert not any(k != "start_load" for k in phases.stages(10.0, marks, staged_at=11.0, hello_at=11.5))


def test_the_grade_adds_up_its_sizes_and_says_what_lay_outside():
    sizes = [{"phases": {"start": 1000.0, "start_process": 900.0, "calls": 300.0, "calls_go": 250.0, "timed": 100.0,
                         "inputs": 50.0}},
             {"phases": {"calls": 200.0, "timed": 100.0, "verification": 50.0, "verification_values": 40.0}},
             {"phases": None}]
    grade = phases.grade_phases(sizes, wall_s=3.0, outside={"startup": 500.0, "teardown": 100.0})
    assert grade["calls"] == 500.0 and grade["timed"] == 200.0 and grade["start_process"] == 900.0
    # 3000 ms of wall: 1000 start + 500 calls + 50 inputs + 50 verification + 600 start-up and
    # teardown; the parts (start_process, calls_go, verification_values) are inside their wholes
    assert grade["outside_sizes"] == 800.0 and grade["overhead_ratio"] == 15.0


def test_a_remainder_is_what_the_block_spent_outside_its_timed_parts():
    spent = {}
    with phases.remainder(spent, "verification", ("calls",)):
        with phases.timed(spent, "calls"):
            time.sleep(0.05)
        time.sleep(0.02)
    assert 45 <= spent["calls"] < 200 and 15 <= spent["verification"] < 45  # the calls are not counted twice


def test_laps_record_consecutive_parts_and_skip_what_is_recorded_elsewhere(monkeypatch):
    now = [10.0]
    monkeypatch.setattr(phases.time, "perf_counter", lambda: now[0])
    spent = {}
    laps = phases.Laps(spent, "calls_")
    now[0] += 0.020
    laps.lap("arm")
    now[0] += 0.030
    laps.skip()  # 30 ms recorded elsewhere: in neither part
    now[0] += 0.010
    laps.lap("go")
    assert spent == {"calls_arm": pytest.approx(20.0), "calls_go": pytest.approx(10.0)}
