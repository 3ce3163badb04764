"""Attempts fanned out as Ray tasks come back as one row per attempt, in the order given, each
with the verdict its own grade gave (a cheat beside correct kernels changes no other row),
whether each task grades one attempt or a batch of them against one expert run."""

import json

import pytest

from conftest import CHEATS, REPO

pytestmark = pytest.mark.grade


@pytest.mark.parametrize("per_task, warm", [(1, False), (2, False), (1, True)],
                         ids=["one_per_task", "batch_per_task", "warm_workers"])
def test_every_attempt_has_its_own_grade_in_order(ray_cluster, tmp_path, per_task, warm):
    from pytest_nodus.fanout.ray_grades import grade_attempts

    attempts = [REPO / "expert" / "rmsnorm" / "solution.py", CHEATS / "rmsnorm" / "return_input.py",
                REPO / "env_suites" / "rmsnorm" / "starting_kernel.py"]
    rows = grade_attempts("rmsnorm", attempts, sealed=REPO / "sealed_fixtures", device="cpu",
                          pytest_args=["-k", "public"], jsonl=tmp_path / "rows.jsonl", out_dir=tmp_path / "grades",
                          per_task=per_task, warm=warm)
    assert [r["attempt"] for r in rows] == [str(a) for a in attempts]
    assert [r["status"] for r in rows] == ["correct", "flagged", "correct"]  # return_input: its outputs alias its inputs
    assert rows[1]["reward"] == -24.0 and all(r["tries"] == 1 for r in rows)
    assert [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()] == rows
    full = json.loads((tmp_path / "grades" / "1-return_input.json").read_text())
    assert full["submission"]["path"] == str(attempts[1]) and full["status"] == "flagged"
