"""The agent's workspace holds the task and nothing sealed, and its check runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from conftest import REPO
import pytest

pytestmark = pytest.mark.grade


def test_workspace_has_the_task_and_nothing_sealed(tmp_path):
    dest = tmp_path / "agent"
    subprocess.run([sys.executable, "-m", "pytest_nodus.commands.workspace", "rmsnorm", str(dest),
                    "--suites", str(REPO / "env_suites")], check=True, cwd=REPO, capture_output=True)
    assert sorted(p.name for p in dest.iterdir()) == ["TASK.md", "check.sh", "kernel.py", "public_sizes.json"]
    text = "\n".join(p.read_text() for p in dest.iterdir())
    hidden = json.loads((REPO / "sealed_fixtures" / "rmsnorm.json").read_text())["hidden_sizes"]
    for dims in hidden["cuda"] + hidden["cpu"]:
        assert f'"M": {dims["M"]}, "N": {dims["N"]}' not in text.replace("\n", " ")
        assert f"M{dims['M']}xN{dims['N']}" not in text and f"{dims['M']} x {dims['N']}" not in text
    public = (REPO / "env_suites" / "rmsnorm" / "starting_kernel.py").read_text()
    for secret in (REPO / "expert" / "rmsnorm").glob("*.py"):
        # Lines the public starting kernel also has (a weight load, say) reveal nothing.
        distinctive = [line for line in secret.read_text().splitlines() if len(line.strip()) > 30 and line not in public]
        assert not any(line in text for line in distinctive), secret.name
    assert "sealed_fixtures" not in text and "seed=" not in text.replace("--nodus-seed=SEED", "")
    sizes = json.loads((dest / "public_sizes.json").read_text())
    assert sizes["public_sizes"]["cuda"][0] == {"M": 4096, "N": 4096}


def test_local_check_runs_the_public_suite(tmp_path):
    dest = tmp_path / "agent"
    subprocess.run([sys.executable, "-m", "pytest_nodus.commands.workspace", "rmsnorm", str(dest),
                    "--suites", str(REPO / "env_suites")], check=True, cwd=REPO, capture_output=True)
    out = subprocess.run(["bash", str(dest / "check.sh"), "--nodus-device=cpu", f"--rootdir={REPO}"],
                         capture_output=True, text=True, cwd=tmp_path, timeout=600,
                         env={"NODUS_ENV_SUITES": str(REPO / "env_suites"), "PYTHONPATH": str(REPO),
                              "PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin"})
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "hidden-" not in out.stdout and "local check" in out.stdout

