"""A sandbox that died at one of its limits says which: the OOM killer's count in its memory
cgroup, the refused forks in its pids cgroup (grader/cgroup_limits.py), whether those are
cgroups v1 of their own or its one v2 cgroup. A sandbox that died of something else says
nothing of limits."""

from __future__ import annotations

import pytest

from pytest_nodus.grader.cgroup_limits import SandboxLimits


def _v1(tmp_path, oom_kills: int, refused_forks: int) -> SandboxLimits:
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    memory.mkdir()
    pids.mkdir()
    (memory / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom 0\noom_kill {oom_kills}\n")
    (pids / "pids.events").write_text(f"max {refused_forks}\n")
    limits = SandboxLimits({"memory": memory, "pids": pids}, None)
    limits.hold(4 << 30, 48)  # writes the limit files into these directories: both held
    assert set(limits.directories) == {"memory", "pids"}
    return limits


def _v2(tmp_path, oom_kills: int, refused_forks: int) -> SandboxLimits:
    own = tmp_path / "nodus-1-0-submission"
    own.mkdir()
    (own / "memory.events").write_text(f"low 0\nhigh 0\nmax 7\noom 1\noom_kill {oom_kills}\noom_group_kill 0\n")
    (own / "pids.events").write_text(f"max {refused_forks}\n")
    limits = SandboxLimits({}, own)
    # As hold() leaves it where the v2 controllers are granted (probing them here would
    # rearrange this machine's cgroups).
    limits.v2_held, limits.memory_bytes, limits.tasks = frozenset({"memory", "pids"}), 4 << 30, 48
    return limits


@pytest.fixture(params=[_v1, _v2], ids=["v1", "v2"])
def limits(request, tmp_path):
    return lambda oom_kills, refused_forks: request.param(tmp_path, oom_kills, refused_forks)


def test_the_memory_limit(limits):
    assert limits(1, 0).breached() == "the kernel killed it at its host memory limit (4 GiB)"


def test_the_task_limit(limits):
    assert limits(0, 3).breached() == "it reached its task limit (48 processes and threads)"


def test_neither(limits):
    assert limits(0, 0).breached() is None
