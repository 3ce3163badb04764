"""Fixtures of the sandbox layer's tests."""

from __future__ import annotations

import pytest

from pytest_nodus.grader.cgroup import SandboxCgroup


@pytest.fixture
def cgroup():
    """An empty sandbox cgroup, removed afterwards; skipped where none can be made."""
    made = SandboxCgroup.create("test")
    if made is None:
        pytest.skip("no writable cgroup v2 hierarchy here (grader/cgroup.py falls back to per-process clocks)")
    yield made
    made.remove()
