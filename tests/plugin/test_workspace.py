"""An agent's workspace holds the task and nothing sealed, refuses to be written over, and its
check runs where it was written."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

FILES = ["TASK.md", "check.sh", "kernel.py", "public_sizes.json"]


# What a fresh install sees: no PYTHONPATH, which would show it the checkout (and pip its metadata).
CLEAN = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def export(dest: Path, *extra: str, python: str = sys.executable, cwd: Path | None = None):
    """``python -m pytest_nodus.workspace rmsnorm DEST``, run from outside the checkout."""
    return subprocess.run([python, "-m", "pytest_nodus.workspace", "rmsnorm", str(dest), *extra],
                          capture_output=True, text=True, cwd=cwd or dest.parent, timeout=300,
                          env=None if python == sys.executable else CLEAN)


def assert_nothing_sealed(text: str) -> None:
    """No hidden size, no line of the expert's or the solution's, no sealed path in ``text``."""
    flat = text.replace("\n", " ")
    hidden = json.loads((REPO / "sealed_fixtures" / "rmsnorm.json").read_text())["hidden_sizes"]
    for dims in hidden["cuda"] + hidden["cpu"]:
        assert f'"M": {dims["M"]}, "N": {dims["N"]}' not in flat
        assert f"M{dims['M']}xN{dims['N']}" not in text and f"{dims['M']} x {dims['N']}" not in text
    public = (REPO / "env_suites" / "rmsnorm" / "starting_kernel.py").read_text()
    for secret in (REPO / "expert" / "rmsnorm").glob("*.py"):
        # Lines the public starting kernel also has (a weight load, say) reveal nothing, and
        # neither do imports (another environment's starting kernel imports what the expert does).
        distinctive = [line for line in secret.read_text().splitlines() if len(line.strip()) > 30
                       and line not in public and not line.lstrip().startswith(("import ", "from "))]
        assert not any(line in text for line in distinctive), secret.name
    assert "sealed_fixtures" not in text and "seed=" not in text.replace("--nodus-seed=SEED", "")


def test_the_workspace_has_the_task_and_nothing_sealed(tmp_path):
    dest = tmp_path / "agent"
    assert export(dest).returncode == 0
    assert sorted(p.name for p in dest.iterdir()) == FILES
    assert_nothing_sealed("\n".join(p.read_text() for p in dest.iterdir()))
    sizes = json.loads((dest / "public_sizes.json").read_text())
    assert sizes["public_sizes"]["cuda"][0] == {"M": 4096, "N": 4096}
    assert sizes["fuzzed_size_domain"]["cuda"]["constraint"] == "M * N <= 2^27"
    card = (dest / "TASK.md").read_text()
    assert all(f"`{name}`" in card or f"`./{name}`" in card for name in ("kernel.py", "check.sh", "public_sizes.json"))
    assert "my_kernel.py" not in card and "starting_kernel.py" not in card and "pytest env_suites" not in card


def test_exporting_over_a_workspace_refuses_unless_forced(tmp_path):
    dest = tmp_path / "agent"
    export(dest)
    (dest / "kernel.py").write_text("# the agent's work\n")
    refused = export(dest)
    assert refused.returncode == 2 and "is not empty" in refused.stderr
    assert (dest / "kernel.py").read_text() == "# the agent's work\n"
    assert export(dest, "--force").returncode == 0
    assert (dest / "kernel.py").read_text() == (REPO / "env_suites" / "rmsnorm" / "starting_kernel.py").read_text()


def test_a_fresh_install_runs_the_workspace_check(tmp_path):
    """The package alone, in a new virtualenv, outside the checkout: the workspace's check runs
    there with no environment variable, finds nothing sealed in what was installed, and writes
    nothing into the workspace."""
    wheels, venv = tmp_path / "wheels", tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO),
                    "-w", str(wheels)], check=True, capture_output=True, timeout=600)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = str(venv / "bin" / "python")
    install = subprocess.run([python, "-m", "pip", "install", "-q", *map(str, wheels.glob("*.whl"))],
                             capture_output=True, text=True, timeout=1200, env=CLEAN)
    assert install.returncode == 0, install.stderr[-3000:]
    site = Path(subprocess.run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, env=CLEAN).stdout.strip())
    packaged = [p for p in (site / "env_suites").rglob("*") if p.is_file() and p.suffix in (".py", ".md")]
    assert not (site / "expert").exists() and not (site / "sealed_fixtures").exists()
    assert_nothing_sealed("\n".join(p.read_text() for p in packaged))

    dest = tmp_path / "elsewhere" / "agent"
    dest.parent.mkdir()
    assert export(dest, python=python).returncode == 0
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path / "home")}  # nothing of the checkout's
    out = subprocess.run(["bash", str(dest / "check.sh"), "--nodus-device=cpu"], capture_output=True, text=True,
                         cwd=dest, timeout=900, env=env)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "correct on every size" in out.stdout and "hidden-" not in out.stdout
    assert str(REPO) not in out.stdout
    assert sorted(p.name for p in dest.iterdir()) == FILES  # no cache, no database, no report
