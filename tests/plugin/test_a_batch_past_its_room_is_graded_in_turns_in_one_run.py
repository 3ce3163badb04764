"""A batch larger than its room (``--nodus-batch-room``; on a GPU, what its memory holds) is
graded in turns inside one pytest run (grader/turns.py): the tests of one turn run together,
turn after turn, and every attempt gets the verdict it gets in a batch graded all at once,
with one grade document per attempt over the same sizes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.grade

ATTEMPTS = {
    "a_solution.py": "expert/rmsnorm/solution.py",
    "b_torch_ops.py": "tests/correct/rmsnorm/torch_ops.py",
    "c_half_rows.py": "tests/cheats/rmsnorm/half_rows.py",  # wrong values
    "d_os_exit.py": "tests/cheats/rmsnorm/os_exit.py",  # its process ends mid-call
    "e_mutate_input.py": "tests/cheats/rmsnorm/mutate_input.py",  # flagged
}


def _grade(pytester, folder: Path, out: Path, *extra):
    outcome = pytester.runpytest_subprocess(str(REPO / "env_suites" / "rmsnorm"), f"--rootdir={REPO}", "-p",
                                            "no:cacheprovider", "-v", f"--nodus-submission={folder}",
                                            f"--nodus-json={out}", "--nodus-device=cpu", "--nodus-seed=20261206",
                                            "--nodus-call-timeout=15", "-k", "public-0 or fuzzed", *extra,
                                            timeout=900)
    assert outcome.ret == 1, outcome.stdout.str()[-3000:]  # not every attempt is correct
    documents = {}
    for row in (json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()):
        documents[Path(row["attempt"]).name] = json.loads((out / f"{row['index']}-{Path(row['attempt']).stem}.json")
                                                          .read_text())
    return outcome.stdout.lines, documents


def _verdict(document):
    return document["status"], sorted({f["code"] for f in document["flags"]}), sorted(s["id"] for s in document["sizes"])


def test_turns_give_the_verdicts_of_one_batch(pytester, tmp_path):
    folder = tmp_path / "attempts"
    folder.mkdir()
    for name, source in ATTEMPTS.items():
        shutil.copy(REPO / source, folder / name)
    lines, in_turns = _grade(pytester, folder, pytester.path / "turns", "--nodus-batch-room=2")
    _, at_once = _grade(pytester, folder, pytester.path / "at_once")
    assert sorted(in_turns) == sorted(ATTEMPTS)
    assert {name: _verdict(d) for name, d in in_turns.items()} == {name: _verdict(d) for name, d in at_once.items()}
    assert in_turns["a_solution.py"]["status"] == in_turns["b_torch_ops.py"]["status"] == "correct"
    assert in_turns["d_os_exit.py"]["status"] == "error" and in_turns["e_mutate_input.py"]["status"] == "flagged"
    # Five attempts in turns of at most two: 2 2 1, one turn after another.
    ran = [turn for line in lines if "::test_" in line and (" PASSED" in line or " FAILED" in line)
           for turn in range(3) if f"turn{turn}]" in line]
    assert ran == sorted(ran) and set(ran) == {0, 1, 2} and len(ran) == 6
