"""A sandbox that died at one of its limits says which: the OOM killer's count in its memory
cgroup, the refused forks in its pids cgroup (grader/cgroup_limits.py). A sandbox that died
of something else says nothing of limits."""

from __future__ import annotations

from pytest_nodus.grader.cgroup_limits import SandboxLimits


def _limits(tmp_path, oom_kills: int, refused_forks: int) -> SandboxLimits:
    memory, pids = tmp_path / "memory", tmp_path / "pids"
    memory.mkdir()
    pids.mkdir()
    (memory / "memory.oom_control").write_text(f"oom_kill_disable 0\nunder_oom 0\noom_kill {oom_kills}\n")
    (pids / "pids.events").write_text(f"max {refused_forks}\n")
    return SandboxLimits({"memory": memory, "pids": pids}, memory_bytes=4 << 30, tasks=48)


def test_the_memory_limit(tmp_path):
    assert _limits(tmp_path, 1, 0).breached() == "the kernel killed it at its host memory limit (4 GiB)"


def test_the_task_limit(tmp_path):
    assert _limits(tmp_path, 0, 3).breached() == "it reached its task limit (48 processes and threads)"


def test_neither(tmp_path):
    assert _limits(tmp_path, 0, 0).breached() is None
