"""A grade's end starts the bytecode cache's helper only where the cache is neither complete nor being filled: thousands of grades a day start it once per host and upgrade."""

from __future__ import annotations

import fcntl
import json
import sys

import pytest

from pytest_nodus.grader import bytecode


@pytest.fixture
def started(tmp_path, monkeypatch):
    where = tmp_path / "bytecode"
    monkeypatch.setattr(bytecode, "directory", lambda: where)
    monkeypatch.setattr(bytecode, "user_cache", lambda: tmp_path)
    calls = []
    monkeypatch.setattr(bytecode.subprocess, "Popen", lambda command, **kw: calls.append(command))
    return where, calls


def test_an_empty_cache_starts_the_helper_on_it(started):
    where, calls = started
    bytecode.refresh()
    assert calls == [[sys.executable, "-m", "pytest_nodus.grader.bytecode", str(where)]]


def test_a_complete_cache_starts_none(started):
    where, calls = started
    where.mkdir()
    (where / bytecode.MARKER).write_text(json.dumps({"key": bytecode.key()}))
    bytecode.refresh()
    assert calls == []


def test_a_cache_being_filled_starts_no_second_helper(started):
    where, calls = started
    where.mkdir()
    with open(where / bytecode.LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        bytecode.refresh()
    assert calls == []
    bytecode.refresh()  # the lock let go: an unfinished fill is started again
    assert len(calls) == 1


def test_the_folder_of_an_installation_that_is_gone_is_removed(tmp_path):
    folders = tmp_path / "bytecode"
    alive, gone, unowned = folders / "alive", folders / "gone", folders / "unowned"
    for folder in (alive, gone, unowned):
        folder.mkdir(parents=True)
    (alive / bytecode.OWNER).write_text(str(tmp_path))
    (gone / bytecode.OWNER).write_text(str(tmp_path / "a-removed-venv"))
    bytecode._remove_orphans(folders)
    assert alive.exists() and unowned.exists() and not gone.exists()


def test_a_complete_cache_beside_a_removed_installations_folder_starts_the_helper(started):
    where, calls = started
    where.mkdir()
    (where / bytecode.MARKER).write_text(json.dumps({"key": bytecode.key()}))
    gone = where.parent / "cpython-of-a-removed-venv"
    gone.mkdir()
    (gone / bytecode.OWNER).write_text(str(where.parent / "a-removed-venv"))
    bytecode.refresh()
    assert len(calls) == 1
