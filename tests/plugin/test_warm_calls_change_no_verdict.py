"""``--nodus-warm-together`` changes no verdict: a batch of cheats that are wrong, flagged,
die mid-call, hang or raise, beside a correct kernel, gets the same status and flags per
attempt with every role's first call side by side as without (grader/warm_up.py: a warm call
that dies or hangs fails the size with a call's code; one that raises is left to the verified
call)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import REPO

pytestmark = pytest.mark.grade

ATTEMPTS = {
    "cheat_fp8_round_trip.py": "tests/cheats/rmsnorm/fp8_round_trip.py",  # wrong values
    "cheat_infinite_loop.py": "tests/cheats/rmsnorm/infinite_loop.py",  # hangs its first call
    "cheat_mutate_input.py": "tests/cheats/rmsnorm/mutate_input.py",  # flagged
    "cheat_os_exit.py": "tests/cheats/rmsnorm/os_exit.py",  # its process ends mid-call
    "solution.py": "expert/rmsnorm/solution.py",
}
RAISES = "def kernel(x, weight, eps):\n    raise RuntimeError('no kernel here')\n"


def _verdicts(pytester, folder: Path, out: Path, *extra) -> dict:
    outcome = pytester.runpytest_subprocess(str(REPO / "env_suites" / "rmsnorm"), f"--rootdir={REPO}", "-p",
                                            "no:cacheprovider", f"--nodus-submission={folder}", f"--nodus-json={out}",
                                            "--nodus-device=cpu", "--nodus-seed=20261205", "--nodus-call-timeout=15",
                                            "-k", "test_size", *extra, timeout=900)
    assert outcome.ret == 1, outcome.stdout.str()[-3000:]  # not every attempt is correct
    rows = [json.loads(line) for line in (out / "grades.jsonl").read_text().splitlines()]
    verdicts = {}
    for row in rows:
        document = json.loads((out / f"{row['index']}-{Path(row['attempt']).stem}.json").read_text())
        verdicts[Path(row["attempt"]).name] = (document["status"], sorted({f["code"] for f in document["flags"]}))
    return verdicts


def test_warm_calls_side_by_side_change_no_verdict(pytester, tmp_path):
    folder = tmp_path / "attempts"
    folder.mkdir()
    for name, source in ATTEMPTS.items():
        shutil.copy(REPO / source, folder / name)
    (folder / "raises.py").write_text(RAISES)
    apart = _verdicts(pytester, folder, pytester.path / "apart")
    together = _verdicts(pytester, folder, pytester.path / "together", "--nodus-warm-together")
    assert together == apart
    assert together["solution.py"][0] == "correct"
    assert together["cheat_infinite_loop.py"][0] == "timeout" and together["cheat_os_exit.py"][0] == "error"
    assert together["raises.py"][0] == "error" and "raised" in together["raises.py"][1]
