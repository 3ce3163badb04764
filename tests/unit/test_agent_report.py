"""The agent-facing report keeps public sizes whole and says of hidden ones only status and a two-digit speedup."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_nodus.grader import agent_report

RECORDED = Path(__file__).resolve().parents[1] / "data" / "h200_attention_solution.json"  # a sealed H200 grade


def _document():
    document = json.loads(RECORDED.read_text())
    hidden = next(s for s in document["sizes"] if s["kind"] == "hidden")
    document["flags"] = [{"size": hidden["id"], "rerun": 0, "code": "raised",
                          "detail": "ValueError: seven thousand one hundred and three rows"},
                         {"size": hidden["id"], "rerun": 0, "code": "made_up_code", "detail": "T=7103"}]
    return document


def test_hidden_sizes_keep_only_status_and_a_rounded_speedup():
    document = _document()
    report = agent_report.build(document)
    hidden = [s for s in report["sizes"] if s["kind"] != "public"]
    assert hidden and all(set(s) == {"id", "kind", "rerun", "status", "speedup"} for s in hidden)
    for s in hidden:
        assert s["speedup"] is None or float(f"{s['speedup']:.2g}") == s["speedup"]
    public = [s for s in report["sizes"] if s["kind"] == "public"]
    full = {(s["id"], s["rerun"]): s for s in document["sizes"] if s["kind"] == "public"}
    assert public and all(s["dims"] == full[s["id"], s["rerun"]]["dims"]
                          and s["t_submission_ms"] == full[s["id"], s["rerun"]]["t_submission_ms"] for s in public)


def test_nothing_the_submission_wrote_and_no_derived_figure():
    text = json.dumps(agent_report.build(_document())) + "\n".join(agent_report.lines(agent_report.build(_document())))
    for leak in ("seven", "7103", "throughput", "claimed", "calls", "GB/s", "TFLOP"):
        assert leak not in text
    report = agent_report.build(_document())
    assert [f["meaning"] for f in report["flags"]] == [agent_report.MEANING["raised"], "the grader flagged this size"]
    assert all(f["size"].startswith("hidden-") and ":" not in f["size"] for f in report["flags"])
