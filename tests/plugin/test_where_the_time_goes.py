"""A grade says where its time went: phases per size and for the grade, the sandboxes' start-up
stages, and one line in the terminal."""

from __future__ import annotations

import pytest
from conftest import REPO

from pytest_nodus.grader import phases

pytestmark = pytest.mark.grade

SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"
PER_SIZE = {"start", "inputs", "reference", "verification", "calls", "timed", "rest", "finish"}


def test_the_grade_and_each_size_say_where_the_time_went(grade):
    result = grade(SOLUTION)
    document = result.document
    timed = [s for s in document["sizes"] if s["kind"] == "public"]
    assert all(PER_SIZE <= set(s["phases"]) for s in timed), [s["phases"] for s in timed]
    assert all(0 < s["phases"]["timed"] <= s["phases"]["calls"] for s in timed)
    first = timed[0]["phases"]
    [fuzz] = [s["phases"] for s in document["sizes"] if s["kind"] == "fuzz"]
    stages = [f"start_{stage}" for stage in (*phases.STAGES, "load", "grader")]
    # The fuzz runs first: the submission's sandbox starts there, and the expert's is launched
    # beside it and counted where it is first called, the first timed size.
    assert all(fuzz[name] >= 0 and first[name] >= 0 for name in stages)
    # From its launch on, each sandbox's stages lie within what ran beside them: the starts,
    # the fuzz's whole time (the expert's launch) and the submission's first call.
    launched = [name for name in stages if name not in ("start_process", "start_preload", "start_standby")]
    beside = sum(ms for name, ms in fuzz.items() if not name.startswith(("start_", "calls_", "verification_"))
                 and name != "timed")
    assert sum(fuzz[name] + first[name] for name in launched) <= \
        2 * (fuzz["start"] + first["start"]) + beside + first["calls_first"] + 1.0
    # Spawned as pytest configured (grader/standby.py), each imported and waited for its launch
    # within the grade's start-up, the fuzz's start and what ran before it (Hypothesis's
    # first draw: outside the sizes).
    waited = sum(size[name] for size in (fuzz, first) for name in ("start_process", "start_preload", "start_standby"))
    total = document["phases"]
    assert 0 < waited <= 2 * (total["startup"] + total["outside_sizes"] + fuzz["start"] + first["start"]) + 1.0
    # Each call's parts lie within the calls, and fill most of them (the rest is bookkeeping).
    parts = [f"calls_{part}" for part in ("freeze", "arm", "open", "go", "expert", "first", "setup", "close", "report")]
    for size in timed:
        # Each sandbox's first call at a size is its own part: the submission's, the expert's.
        assert size["phases"]["calls_first"] > 0 and size["phases"]["calls_setup"] > 0
        assert size["phases"]["calls_go"] > 0 and size["phases"]["calls_expert"] > 0
        spent = sum(size["phases"][name] for name in parts)
        assert 0.5 * size["phases"]["calls"] <= spent <= size["phases"]["calls"] + 0.5, size["phases"]
    # Each part of the verification lies within it.
    checked = [f"verification_{part}" for part in ("place", "outputs", "processes", "inputs", "values")]
    for size in timed:
        assert all(size["phases"][name] > 0 for name in checked), size["phases"]
        assert sum(size["phases"][name] for name in checked) <= size["phases"]["verification"] + 0.5
    assert total["wall"] == pytest.approx(1e3 * document["wall_s"], abs=1.0)
    assert total["calls"] == pytest.approx(sum(s["phases"]["calls"] for s in document["sizes"]), abs=0.5)
    assert total["startup"] > 0 and total["teardown"] > 0 and total["overhead_ratio"] > 1
    assert "time (s): wall " in result.text and "x the timed kernel work" in result.text
