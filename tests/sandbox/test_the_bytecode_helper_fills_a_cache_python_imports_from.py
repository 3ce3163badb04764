"""The grader's bytecode helper fills its folder and marks it complete last, and an interpreter pointed at it imports torch from it, no module compiled from source."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO

from pytest_nodus.grader import bytecode


def test_filled_marked_and_imported_from(tmp_path):
    where = tmp_path / "cache"
    env = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "pytest_nodus.grader.bytecode", str(where)], env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert bytecode.complete(where)
    # Every module torch's import loads from a source file has its current bytecode there:
    # Python, pointed at the folder, compiles none of them.
    probe = ("import sys, os, torch, importlib.util\n"
             "from pytest_nodus.grader import bytecode_files\n"
             "missing = [m.__file__ for m in list(sys.modules.values()) if getattr(m, '__file__', None)\n"
             "           and m.__file__.endswith('.py') and os.path.isfile(m.__file__)\n"
             "           and not bytecode_files.current(importlib.util.cache_from_source(m.__file__), os.stat(m.__file__))]\n"
             "print(len(sys.modules), missing[:5])")
    run = subprocess.run([sys.executable, "-c", probe], env={**env, "PYTHONPYCACHEPREFIX": str(where),
                                                               "PYTHONDONTWRITEBYTECODE": "1"},
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith("[]"), run.stdout
