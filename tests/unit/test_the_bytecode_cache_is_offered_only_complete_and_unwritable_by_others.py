"""The grader offers its bytecode cache to its processes and sandboxes only once a helper finished it, only where no other uid can write it and only where Landlock keeps a submission's writes in its scratch."""

from __future__ import annotations

import json

import pytest

from pytest_nodus.grader import bytecode, sandbox_env
from pytest_nodus.sandbox import landlock


@pytest.fixture
def cache(tmp_path, monkeypatch):
    where = tmp_path / "bytecode"
    where.mkdir(mode=0o755)
    monkeypatch.setattr(bytecode, "directory", lambda: where)
    monkeypatch.setattr(bytecode, "user_cache", lambda: tmp_path)
    return where


def _finish(where):
    (where / bytecode.MARKER).write_text(json.dumps({"key": bytecode.key()}))


@pytest.mark.skipif(landlock.abi_version() == 0, reason="this kernel has no Landlock: the cache is never offered")
def test_offered_once_complete_to_sandboxes_and_grading_processes(cache, tmp_path):
    assert bytecode.offered() is None
    assert "PYTHONPYCACHEPREFIX" not in sandbox_env.variables(tmp_path, None, None, "submission")
    _finish(cache)
    assert bytecode.offered() == cache
    for role in ("submission", "expert"):
        env = sandbox_env.variables(tmp_path, None, None, role)
        assert env["PYTHONPYCACHEPREFIX"] == str(cache) and env["PYTHONDONTWRITEBYTECODE"] == "1"
    grading = bytecode.process_environ()
    assert grading["PYTHONPYCACHEPREFIX"] == str(cache) and grading["PYTHONDONTWRITEBYTECODE"] == "1"


def test_never_a_folder_another_uid_can_write(cache):
    _finish(cache)
    cache.chmod(0o777)
    assert bytecode.offered() is None


def test_never_without_landlock(cache, monkeypatch):
    _finish(cache)
    monkeypatch.setattr(landlock, "abi_version", lambda: 0)
    assert bytecode.offered() is None
