"""A submission's sandbox started again within a grade (after a crash, or for a larger arena)
runs under its last one's uid and finds the Triton and inductor caches that one left, at the
same path (inductor's entries name their files by absolute path; where that path is taken,
inductor's cache stays behind): its first calls load what it compiled instead of compiling
again. The grader moves each cache directory with one rename and follows no link inside or
at it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import REPO
from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM
from pytest_nodus.grader import devices
from pytest_nodus.grader.sandbox_pool import SandboxPool

CPU = devices.Device("cpu", None, "cpu", None)
DIMS = RMSNORM.profile("cpu").sizes[0]
SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


@pytest.fixture
def pool():
    pool = SandboxPool(SOLUTION, CPU, audit=True, expert_cache=None, trusted=False)
    yield pool
    pool.close()


def _crash(sandbox) -> None:
    sandbox._spawned.stop()  # as a crashed kernel's process ends
    sandbox.process.wait()


def test_the_next_sandbox_inherits_the_caches_and_the_uid(pool):
    first = pool.get(RMSNORM, "submission", DIMS)
    scratch, uid = first._spawned.scratch, first._spawned.uid
    compiled = scratch / "triton" / "0123abcd"
    compiled.mkdir(parents=True)
    (compiled / "kernel.cubin").write_bytes(b"compiled")
    os.symlink("/etc", scratch / "inductor")  # the sandbox may leave a link where a cache was
    _crash(first)

    second = pool.get(RMSNORM, "submission", DIMS)
    assert second is not first and second.alive
    assert second._spawned.uid == uid
    new = second._spawned.scratch
    assert new == scratch and (new.stat().st_mode & 0o777) == 0o700  # made again, as private
    assert (new / "triton" / "0123abcd" / "kernel.cubin").read_bytes() == b"compiled"
    assert (new / "inductor").is_symlink() and os.readlink(new / "inductor") == "/etc"  # moved as a link
    assert not list(Path(scratch.parent).glob("nodus-carried-*"))


def test_where_its_old_path_is_taken_only_the_path_free_caches_follow(pool, monkeypatch):
    first = pool.get(RMSNORM, "submission", DIMS)
    scratch = first._spawned.scratch
    (scratch / "triton").mkdir()
    (scratch / "inductor").mkdir()
    (scratch / "inductor" / "kernel.best_config").write_text("{}")
    _crash(first)
    taken = scratch  # made again by someone else between the old sandbox's close and the next start
    close = first.close
    monkeypatch.setattr(first, "close", lambda: (close(), taken.mkdir()))
    second = pool.get(RMSNORM, "submission", DIMS)
    new = second._spawned.scratch
    assert new != scratch
    assert (new / "triton").is_dir() and not (new / "inductor").exists()
    taken.rmdir()


def test_the_expert_carries_nothing(pool):
    first = pool.get(RMSNORM, "expert", DIMS)
    (first._spawned.scratch / "triton").mkdir()
    _crash(first)
    second = pool.get(RMSNORM, "expert", DIMS)
    assert not (second._spawned.scratch / "triton").exists()
