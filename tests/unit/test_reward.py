"""From per-size verdicts to the reward: log2 of the geometric mean when correct, the floor otherwise."""

from __future__ import annotations

import math
import pytest
from pytest_nodus.grader.reward import FLOOR, status_of, verdict


def size(status="correct", speedup=1.0, timed=True):
    return {"status": status, "speedup": speedup, "timed": timed}


def test_correct_reward_is_log2_of_geometric_mean():
    result = verdict([size(speedup=2.0), size(speedup=8.0), size(speedup=None, timed=False)])
    assert result.status == "correct"
    assert result.reward == pytest.approx(math.log2(4.0))


def test_reward_follows_speed_smoothly():
    rewards = [verdict([size(speedup=s)]).reward for s in (0.5, 0.99, 1.0, 1.01, 2.0)]
    assert rewards == sorted(rewards) and rewards[2] == 0.0
    assert rewards[3] - rewards[1] == pytest.approx(math.log2(1.01 / 0.99))


@pytest.mark.parametrize("status", ["wrong", "flagged", "error", "timeout"])
def test_anything_but_correct_is_the_floor_however_fast(status):
    result = verdict([size(speedup=1000.0), size(status=status, speedup=1000.0)])
    assert result.status == status and result.reward == FLOOR
    assert result.speedup == pytest.approx(1000.0)  # what the timer saw, kept for the record


def test_most_serious_status_wins():
    assert status_of(["wrong_values", "timeout", "input_mutated"]) == "flagged"
    assert status_of(["wrong_values", "raised"]) == "error"
    assert status_of([]) == "correct"


def test_nothing_timed_is_no_reward():
    assert verdict([size(timed=False, speedup=None)]).reward == FLOOR
    assert verdict([]).reward == FLOOR



def test_a_grade_stopped_early_carries_its_failure_into_unreached_reruns():
    from pytest_nodus.grader.report import build_grade

    meta = {"submission": {"path": "k.py", "sha256": "0"}, "device": {"kind": "cpu"}, "sealed": True,
            "grader": {}, "not_graded": 5}
    failed = {"id": "public-0", "kind": "public", "rerun": 0, "status": "flagged", "timed": True, "speedup": 9.0,
              "flags": []}
    document = build_grade([failed], meta, reruns=3)
    assert document["status"] == "flagged" and document["reward"] == FLOOR
    assert document["reruns"]["statuses"] == ["flagged"] * 3 and document["not_graded"] == 5
    # Without the stop, an empty rerun is an error of its own (nothing was graded).
    assert build_grade([failed], {**meta, "not_graded": 0}, reruns=3)["reruns"]["statuses"] == ["flagged", "error", "error"]
