"""``nodus-ray`` grades the attempts of a folder as Ray tasks, prints one row per attempt,
draws the batch (``--png``) and exits non-zero when any attempt is not correct."""

import json
import shutil

import pytest

from conftest import CHEATS, REPO

pytestmark = pytest.mark.grade


def test_a_folder_of_attempts_gives_a_row_each_and_a_failing_exit(ray_cluster, tmp_path, capsys):
    from pytest_nodus.commands.ray_grades import main

    attempts = tmp_path / "attempts"
    attempts.mkdir()
    shutil.copy(REPO / "expert" / "rmsnorm" / "solution.py", attempts / "a_solution.py")
    shutil.copy(CHEATS / "rmsnorm" / "mutate_input.py", attempts / "b_cheat.py")
    status = main(["rmsnorm", str(attempts), "--sealed", str(REPO / "sealed_fixtures"), "--device", "cpu",
                   "--jsonl", str(tmp_path / "rows.jsonl"), "--png", str(tmp_path / "batch.png")])
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["attempt"].rsplit("/", 1)[1], r["status"] == "correct") for r in rows] == [
        ("a_solution.py", True), ("b_cheat.py", False)]
    assert rows[1]["reward"] == -24.0 and status == 1
    assert (tmp_path / "rows.jsonl").read_text().splitlines() == [json.dumps(r) for r in rows]
    assert (tmp_path / "batch.png").read_bytes()[:4] == b"\x89PNG"
