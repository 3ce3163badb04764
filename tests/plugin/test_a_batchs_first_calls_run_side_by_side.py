"""With ``--nodus-warm-together`` every role's first call at a size runs at once, before the
size's rounds (grader/warm_up.py): three attempts whose first call at each shape takes 4 s
(a compile's worth) cost one such wait per size, not three, and each is still verified in
every round after."""

from __future__ import annotations

import json

import pytest

from conftest import REPO

pytestmark = pytest.mark.grade

SUITE = REPO / "tests" / "envs" / "axpy" / "suite_axpy.py"
FIRST_CALL_S = 4.0
SLOW_FIRST_CALL = '''
import time

import torch

_shapes = set()


def kernel(x, y, alpha):
    if x.shape not in _shapes:  # a compile's worth of first call at each shape
        time.sleep(4.0)
        _shapes.add(x.shape)
    return torch.add(y.float(), x.float(), alpha=alpha).to(torch.bfloat16)
'''


def test_three_attempts_first_calls_overlap(pytester, tmp_path):
    folder = tmp_path / "attempts"
    folder.mkdir()
    for i in range(3):
        (folder / f"slow_{i}.py").write_text(SLOW_FIRST_CALL)
    out = pytester.path / "batch"
    outcome = pytester.runpytest_subprocess(str(SUITE), f"--rootdir={REPO}", "-p", "no:cacheprovider",
                                            f"--nodus-submission={folder}", f"--nodus-json={out}",
                                            "--nodus-device=cpu", "--nodus-seed=3", "--nodus-warm-together",
                                            "-k", "test_size", timeout=600)
    assert outcome.ret == 0, outcome.stdout.str()[-3000:]
    documents = [json.loads(p.read_text()) for p in sorted(out.glob("*-*.json"))]
    assert len(documents) == 3 and all(d["status"] == "correct" for d in documents)
    sizes = [s for s in documents[0]["sizes"] if s["kind"] == "public"]
    for size in sizes:
        # One side-by-side wait per size: well under the three one after another would take.
        assert FIRST_CALL_S * 1e3 <= size["phases"]["warm"] < 2 * FIRST_CALL_S * 1e3, size["phases"]
        assert size["phases"].get("calls_first", 0.0) < FIRST_CALL_S * 1e3  # compiled by then
    assert documents[0]["wall_s"] < 3 * FIRST_CALL_S * len(sizes)
