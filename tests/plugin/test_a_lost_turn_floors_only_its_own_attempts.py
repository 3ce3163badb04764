"""A batch graded in turns under xdist: a graded test whose worker dies leaves a ``no_result``
on the attempts of its own turn only (the controller plans no turns: each test's setup report
names its attempts), and the other turn's attempts keep their verdicts."""

from __future__ import annotations

import json
import shutil

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

TORCH_OPS = REPO / "tests" / "correct" / "rmsnorm" / "torch_ops.py"


def test_a_dead_workers_test_floors_its_turns_attempts_only(pytester, tmp_path):
    pytester.makepyfile(worker_killer="""
        import os

        def pytest_runtest_call(item):
            if "public-1" in item.nodeid and "turn1]" in item.nodeid and os.environ.get("PYTEST_XDIST_WORKER"):
                os._exit(1)
    """)
    pytester.syspathinsert()
    folder = tmp_path / "attempts"
    folder.mkdir()
    for name in ("a.py", "b.py", "c.py"):
        shutil.copy(TORCH_OPS, folder / name)
    out = pytester.path / "grades"
    pytester.runpytest_subprocess(str(REPO / "env_suites" / "rmsnorm"), f"--rootdir={REPO}", "-p", "no:cacheprovider",
                                  "-p", "worker_killer", f"--nodus-submission={folder}", f"--nodus-json={out}",
                                  "--nodus-device=cpu", "--nodus-batch-room=2", "-k", "public-0 or public-1", "-n", "2",
                                  timeout=600)
    lost = {}
    for index, name in enumerate(("a", "b", "c")):  # turns: [a, b], [c]
        document = json.loads((out / f"{index}-{name}.json").read_text())
        lost[name] = [f["size"] for f in document["flags"] if f["code"] == "no_result"]
        assert document["status"] == ("error" if name == "c" else "correct"), document["flags"]
    assert lost == {"a": [], "b": [], "c": ["public-1:M33xN1000"]}
