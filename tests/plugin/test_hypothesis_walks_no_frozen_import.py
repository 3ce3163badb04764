"""Hypothesis's first test runs a full garbage collection and a search of every object's
referrers (registering its PRNG); the grader freezes its imports' objects before it
(grader/frozen_heap.py), so that walk skips the ~200,000 objects every grade holds."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

# Loaded into the grading process with -p: how many objects were frozen when Hypothesis
# registered its PRNG.
PROBE = '''
import gc
import json
from pathlib import Path

import hypothesis.internal.entropy as entropy

_register = entropy.register_random
seen = []


def _counted(r):
    seen.append(gc.get_freeze_count())
    return _register(r)


entropy.register_random = _counted


def pytest_sessionfinish(session):
    Path("frozen_at_registration.json").write_text(json.dumps(seen))
'''


def test_hypothesis_registers_its_prng_with_the_imports_frozen(grade, pytester):
    pytester.makepyfile(nodus_freeze_probe=PROBE)
    graded = grade(REPO / "expert" / "rmsnorm" / "solution.py", "--nodus-seed=5", "-k", "fuzzed",
                   "-p", "nodus_freeze_probe")
    assert any(s["kind"] == "fuzz" for s in graded.document["sizes"])
    seen = json.loads((pytester.path / "frozen_at_registration.json").read_text())
    assert len(seen) == 1 and seen[0] > 50_000, seen
