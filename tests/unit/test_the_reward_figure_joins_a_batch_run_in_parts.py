"""A batch graded in runs (one GPU holds only so many attempts' sandboxes) is drawn as one
figure: ``nodus-plot`` takes the runs' ``grades.jsonl`` beside single grades' documents."""

import json

from pytest_nodus.commands import plot


def _rows(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_rows_of_several_runs_and_a_grade_document_are_one_set_of_points(tmp_path):
    first = _rows(tmp_path / "run1.jsonl", [
        {"index": 0, "attempt": "/a/solution.py", "status": "correct", "reward": 0.6, "speedup": 1.52},
        {"index": 1, "attempt": "/a/cheat_fp8.py", "status": "wrong", "reward": -24.0, "speedup": 3.1}])
    second = _rows(tmp_path / "run2.jsonl", [
        {"index": 0, "attempt": "/a/correct_split.py", "status": "correct", "reward": -0.5, "speedup": 0.71},
        {"index": 1, "attempt": "/a/cheat_hang.py", "status": "timeout", "reward": -24.0, "speedup": None}])
    alone = tmp_path / "starting_kernel.json"
    alone.write_text(json.dumps({"status": "correct", "reward": -2.0, "speedup": 0.25}))

    points = plot.points_from_paths([first, second, alone])

    assert sorted(points) == ["cheats", "correct kernels", "solution", "starting kernel"]
    cheats = {p[2]: p[:2] for p in points["cheats"]}
    assert cheats == {"cheat_fp8": (3.1, -24.0), "cheat_hang": (1e-2, -24.0)}  # never timed: the left edge
    assert [p[:2] for p in points["solution"]] == [(1.52, 0.6)]


def test_the_figure_is_written(tmp_path):
    rows = _rows(tmp_path / "grades.jsonl", [
        {"index": 0, "attempt": "/a/solution.py", "status": "correct", "reward": 0.6, "speedup": 1.52}])
    out = tmp_path / "all.png"
    assert plot.main([str(rows), "-o", str(out)]) == 0
    assert out.stat().st_size > 1000
