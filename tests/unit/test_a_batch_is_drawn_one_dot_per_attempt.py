"""A batch's figure (``nodus-ray --png``): one dot per attempt that has a reward, the
solution and the starting kernel marked by name, other attempts by verdict, and an attempt
that never ran at the floor on the left edge, never dropped."""

from __future__ import annotations

import pytest

from pytest_nodus.commands import plot

pytest.importorskip("matplotlib")

ROWS = [
    {"attempt": "runs/solution.py", "status": "correct", "reward": 0.25, "speedup": 1.19},
    {"attempt": "runs/starting_kernel.py", "status": "correct", "reward": -1.4, "speedup": 0.38},
    {"attempt": "runs/a17.py", "status": "correct", "reward": -0.5, "speedup": 0.71},
    {"attempt": "runs/a18.py", "status": "flagged", "reward": -24.0, "speedup": 3.1},
    {"attempt": "runs/a19.py", "status": "error", "reward": -24.0, "speedup": None},  # no_result: never timed
    {"attempt": "runs/a20.py", "status": "correct", "reward": None, "speedup": 1.0},  # a CPU check: no reward
]


def test_each_attempt_with_a_reward_is_one_point_in_its_group():
    points = plot.points_from_rows(ROWS)
    assert {label: [p[2] for p in pts] for label, pts in points.items()} == {
        "solution": ["solution"], "starting kernel": ["starting_kernel"],
        "attempts, correct": ["a17"], "attempts, not correct": ["a18", "a19"]}
    assert points["attempts, not correct"][1][:2] == (1e-2, -24.0)


def test_the_figure_is_a_png_of_every_point(tmp_path):
    out = tmp_path / "batch.png"
    assert plot.draw(plot.points_from_rows(ROWS), out, "batch", labels=False) == 5
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
