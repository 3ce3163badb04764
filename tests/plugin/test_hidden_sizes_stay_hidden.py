"""No hidden dim reaches the terminal report, the JSON or the agent-facing report, in any
shipped environment."""

from __future__ import annotations

import json

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

SOLUTIONS = {
    "rmsnorm": REPO / "expert" / "rmsnorm" / "solution.py",
    "attention_backward": REPO / "expert" / "attention_backward" / "solution.py",
    "chunked_prefill": REPO / "expert" / "chunked_prefill" / "solution.py",
    "moe_experts": REPO / "expert" / "moe_experts" / "solution.py",
}


@pytest.mark.parametrize("env", sorted(SOLUTIONS))
def test_hidden_sizes_stay_hidden(grade, tmp_path, env):
    agent = tmp_path / "agent.json"
    result = grade(SOLUTIONS[env], f"--nodus-agent-report={agent}", env=env, sealed=True)
    assert result.document["status"] == "correct", result.document["flags"]
    hidden = [s for s in result.document["sizes"] if s["kind"] == "hidden"]
    assert hidden and all(s["dims"] is None and s["id"].startswith("hidden-") for s in hidden)
    sealed = json.loads((REPO / "sealed_fixtures" / f"{env}.json").read_text())["hidden_sizes"]["cpu"]
    assert len(hidden) == len(sealed)
    texts = {"terminal": result.text, "json": json.dumps(result.document), "agent report": agent.read_text()}
    for dims in sealed:
        for spelled in ("x".join(f"{k}{v}" for k, v in dims.items()), json.dumps(dims), json.dumps(dims)[1:-1]):
            for where, text in texts.items():
                assert spelled not in text, f"{spelled} in the {where}"
