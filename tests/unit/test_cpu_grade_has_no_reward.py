"""A correct CPU grade is a correctness check with no reward; a failed one is still the floor."""

from __future__ import annotations

from pytest_nodus.grader import report, reward


def _grade(kind: str, status: str = "correct", speedup: float = 0.01):
    sizes = [{"id": "public-0:N8", "kind": "public", "rerun": 0, "status": status, "timed": True, "speedup": speedup,
              "flags": [] if status == "correct" else [{"code": "wrong_values", "detail": "x"}]}]
    meta = {"submission": {"path": "k.py", "sha256": "0" * 64}, "sealed": False, "seed": 1, "wall_s": 1.0,
            "device": {"kind": kind, "name": "x", "description": "x"}, "grader": {"version": "0"}}
    return report.build_grade(sizes, meta, 1)


def test_a_correct_cpu_grade_has_no_reward():
    document = _grade("cpu")
    assert document["status"] == "correct" and document["reward"] is None
    assert document["reward_basis"] == reward.CPU_CHECK and abs(document["speedup"] - 0.01) < 1e-12
    assert document["reruns"]["rewards"] == [None] and document["reruns"]["min"] is None


def test_a_failed_cpu_grade_is_the_floor():
    document = _grade("cpu", status="wrong")
    assert document["reward"] == reward.FLOOR and document["reruns"]["rewards"] == [reward.FLOOR]


def test_a_gpu_grade_pays_its_speed():
    document = _grade("cuda", speedup=2.0)
    assert abs(document["reward"] - 1.0) < 1e-12 and document["reward_basis"] == reward.SPEED_VS_EXPERT
