"""The JSON keeps every timed call's readings (the submission's: the grader's window only),
and the medians and rewards come from them."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import jsonschema
import pytest
from conftest import REPO
from pytest_nodus.grader.report import SCHEMA_PATH

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


SCHEMA = json.loads(SCHEMA_PATH.read_text())


def test_each_timed_call_is_in_the_json_and_the_medians_come_from_them(grade):
    document = grade(SOLUTION, "-k", "public or fuzz").document
    jsonschema.validate(document, SCHEMA)
    timed = [s for s in document["sizes"] if s["kind"] == "public"]
    assert timed and all(s["timed_calls"] is None for s in document["sizes"] if s["kind"] == "fuzz")
    for size in timed:
        calls = size["timed_calls"]
        assert set(calls) == {"expert", "submission"}
        assert len(calls["expert"]) == len(calls["submission"]) == size["calls"] - 1  # the CPU plan: one warm-up
        # The submission's claims are digits it chose: none is recorded.
        assert all(c["t_stream_ms"] is None and c["t_call_ms"] is None and c["window_ms"] is not None
                   for c in calls["submission"])
        # Every role's time is its windows less a fixed cost: the expert's measured on its
        # trusted claims, the submission's recorded (at most the expert's; it was measured on
        # claims the record does not keep). Both are counted on the grader's clock.
        overhead = statistics.median(c["window_ms"] - c["t_stream_ms"] for c in calls["expert"])
        assert size["overhead_ms"] == pytest.approx(overhead, abs=1e-9)
        assert size["submission_overhead_ms"] <= size["overhead_ms"]
        for role, taken in (("expert", overhead), ("submission", size["submission_overhead_ms"])):
            counted = statistics.median(max(c["window_ms"] - taken, 0.0) for c in calls[role])
            assert size[f"t_{role}_ms"] == pytest.approx(counted, abs=1e-6), role


def test_a_grade_counted_again_from_its_json_gives_its_rewards(grade, tmp_path):
    """nodus-recount reads timing-rule changes against recorded GPU grades; that is only
    worth anything if counting a grade's recorded calls again reproduces the grade."""
    document = grade(SOLUTION, "-k", "public", "--nodus-reruns=2").document
    path = tmp_path / "grade.json"
    path.write_text(json.dumps(document))
    out = subprocess.run([sys.executable, "-m", "pytest_nodus.commands.recount", str(path)],
                         capture_output=True, text=True, check=True).stdout
    head = out.splitlines()[0]
    recorded, counted = head.split("speedups ")[1].split(" -> ")
    assert recorded.split() == [f"{r:.3f}" for r in document["reruns"]["speedups"]]
    assert counted == recorded, out
    assert head.split("rewards ")[1].split("  speedups")[0] == "none none -> none none"  # a CPU check pays nothing
    assert len(out.splitlines()) == 1, out  # no size moved

