"""A batch (``--nodus-submission`` naming a folder) grades every attempt in one pytest run
against one expert run, and each attempt gets the verdict its own grade would have given:
cheats that fail the checks, crash their process or hang leave the rounds without touching
the correct attempts' grades. Each attempt's document is a whole grade in the usual schema;
the folder also holds the rows (grades.jsonl) and the picture (grades.png)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
import pytest

pytestmark = pytest.mark.grade

REPO = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((REPO / "pytest_nodus" / "grader" / "schema" / "grade.schema.json").read_text())
SEED = "--nodus-seed=20261203"
TIMEOUT = "--nodus-call-timeout=15"
ATTEMPTS = {  # file name in the batch: where it comes from
    "cheat_half_rows.py": "tests/cheats/rmsnorm/half_rows.py",  # wrong values
    "cheat_infinite_loop.py": "tests/cheats/rmsnorm/infinite_loop.py",  # hangs its first call
    "cheat_mutate_input.py": "tests/cheats/rmsnorm/mutate_input.py",  # flagged
    "cheat_os_exit.py": "tests/cheats/rmsnorm/os_exit.py",  # its process ends mid-call
    "correct_torch_ops.py": "tests/correct/rmsnorm/torch_ops.py",
    "solution.py": "expert/rmsnorm/solution.py",
}


def _run(pytester, submission, out, *extra):
    return pytester.runpytest_subprocess(str(REPO / "env_suites" / "rmsnorm"), f"--rootdir={REPO}", "-p",
                                         "no:cacheprovider", f"--nodus-submission={submission}",
                                         f"--nodus-json={out}", "--nodus-device=cpu", SEED, TIMEOUT, *extra,
                                         timeout=900)


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    folder = tmp_path_factory.mktemp("attempts")
    for name, source in ATTEMPTS.items():
        shutil.copy(REPO / source, folder / name)
    return folder


def _verdict(document):
    return document["status"], sorted({f["code"] for f in document["flags"]})


def test_each_attempt_gets_the_verdict_of_its_own_grade(pytester, batch):
    out = pytester.path / "batch"
    outcome = _run(pytester, batch, out)
    assert outcome.ret == 1  # not every attempt is correct
    rows = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    assert [Path(r["attempt"]).name for r in rows] == sorted(ATTEMPTS)
    for row in rows:
        document = json.loads((out / f"{row['index']}-{Path(row['attempt']).stem}.json").read_text())
        jsonschema.validate(document, SCHEMA)
        alone = _run(pytester, batch / Path(row["attempt"]).name, pytester.path / f"alone-{row['index']}.json")
        own = json.loads((pytester.path / f"alone-{row['index']}.json").read_text())
        assert _verdict(document) == _verdict(own), row["attempt"]
        assert (row["status"], row["reward"]) == (document["status"], document["reward"])
        assert alone.ret == (0 if own["status"] == "correct" else 1)
    statuses = {Path(r["attempt"]).name: r["status"] for r in rows}
    assert statuses["correct_torch_ops.py"] == statuses["solution.py"] == "correct"
    assert statuses["cheat_infinite_loop.py"] == "timeout" and statuses["cheat_os_exit.py"] == "error"
    assert (out / "grades.png").stat().st_size > 10_000
    assert "pytest-nodus batch: 6 attempts" in outcome.stdout.str()


def test_every_attempt_is_timed_against_the_same_expert_calls(pytester, batch):
    out = pytester.path / "batch"
    _run(pytester, batch, out, "-k", "test_size")
    documents = [json.loads(p.read_text()) for p in sorted(out.glob("*-*.json"))]
    correct = [d for d in documents if d["status"] == "correct"]
    assert len(correct) == 2
    for size in {s["id"] for s in correct[0]["sizes"]}:
        expert = [[c["t_call_ms"] for c in s["timed_calls"]["expert"]] for d in correct for s in d["sizes"]
                  if s["id"] == size]
        assert len(expert) == 2 and expert[0] == expert[1] and len(expert[0]) > 0


def test_a_batch_under_xdist_gives_the_same_verdicts(pytester, batch):
    plain, spread = pytester.path / "plain", pytester.path / "spread"
    _run(pytester, batch, plain, "-k", "test_size")
    _run(pytester, batch, spread, "-k", "test_size", "-n", "2")
    read = {folder: [json.loads(line) for line in (folder / "grades.jsonl").read_text().splitlines()]
            for folder in (plain, spread)}
    assert [(r["attempt"], r["status"]) for r in read[plain]] == [(r["attempt"], r["status"]) for r in read[spread]]
