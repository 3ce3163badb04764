"""A trusted grade (the grader's own expert as the submission, to calibrate the timer) keeps
the submission's claims in the record, so each role's fixed cost can be compared; an
untrusted grade's are dropped (tests/plugin/test_json_keeps_every_timed_call.py)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import REPO
from pytest_nodus.grader.report import SCHEMA_PATH

pytestmark = pytest.mark.grade

EXPERT = REPO / "expert" / "rmsnorm" / "expert_cpu.py"


def test_a_trusted_grade_records_the_submissions_claims(grade):
    document = grade(EXPERT, "--nodus-trusted", "-k", "public").document
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["trusted"] is True
    timed = [s for s in document["sizes"] if s["timed_calls"]]
    assert timed
    for size in timed:
        calls = size["timed_calls"]["submission"]
        assert calls and all(c["t_stream_ms"] is not None and c["t_call_ms"] is not None for c in calls)
