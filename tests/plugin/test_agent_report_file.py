"""--nodus-agent-report writes the agent-safe report of a sealed grade: no hidden dims, no submission text."""

from __future__ import annotations

import json
import re

import pytest

pytestmark = pytest.mark.grade

# Raises on every call with words, not digits: what a scrubber of digit runs would let through.
WORDY = '''
def kernel(x, weight, eps):
    raise ValueError("rows " + " ".join(["zero one two three four five six seven eight nine".split()[int(c)]
                                          for c in str(x.shape[0])]))
'''


def test_the_agent_report_of_a_sealed_grade_holds_nothing_sealed(grade, tmp_path):
    submission = tmp_path / "wordy.py"
    submission.write_text(WORDY)
    report_path = tmp_path / "agent.json"
    result = grade(submission, f"--nodus-agent-report={report_path}", sealed=True)
    assert "rows" in json.dumps(result.document)  # the full grade keeps the detail, for the pipeline
    report = json.loads(report_path.read_text())
    assert report["status"] == "error" and report["reward"] == -24
    text = report_path.read_text()
    assert "rows" not in text and not re.search(r"\b(zero|one|two|three|four|five|six|seven|eight|nine)\b", text)
    hidden = [s for s in report["sizes"] if s["kind"] == "hidden"]
    assert hidden and all("dims" not in s and s["id"] == f"hidden-{s['id'].split('-')[1]}" for s in hidden)
    assert {f["code"] for f in report["flags"]} == {"raised"}
