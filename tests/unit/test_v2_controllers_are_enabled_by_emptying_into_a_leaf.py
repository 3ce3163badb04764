"""On a cgroup v2 host the grader enables the limit controllers its parent grants for the
children of its own cgroup, which the kernel allows only once that cgroup holds no process
(the hierarchy's root excepted): so it first moves every process into its leaf child
(grader/cgroup_limits.py). Checked against a model of the kernel's rules, since this
machine's v2 hierarchy grants neither controller (the real one ran on the H200)."""

from __future__ import annotations

import errno

import pytest

from pytest_nodus.grader import cgroup, cgroup_limits


class KernelModel:
    """What the kernel does with the files the grader writes: a pid written into a cgroup's
    ``cgroup.procs`` leaves the one it was in; ``cgroup.subtree_control`` refuses a
    controller the parent does not grant (ENOENT) and, outside the root, any while the
    cgroup holds a process (EBUSY)."""

    def __init__(self, home, processes, granted, root=False):
        self.home, self.root = home, root
        self.procs = {home: list(processes)}
        self.files = {home / "cgroup.controllers": " ".join(granted), home / "cgroup.subtree_control": "",
                      home / "cgroup.type": "" if root else "domain"}

    def read(self, path):
        if path.name == "cgroup.procs":
            return " ".join(self.procs.get(path.parent, []))
        return self.files.get(path, "")

    def write(self, path, text):
        if path.name == "cgroup.procs":
            for members in self.procs.values():
                if text in members:
                    members.remove(text)
            self.procs.setdefault(path.parent, []).append(text)
            return
        assert path == self.home / "cgroup.subtree_control", path
        wanted = {word.lstrip("+") for word in text.split()}
        if not wanted <= set(self.files[self.home / "cgroup.controllers"].split()):
            raise OSError(errno.ENOENT, "not granted")
        if not self.root and self.procs[self.home]:
            raise OSError(errno.EBUSY, "holds processes")
        self.files[path] = " ".join(sorted(set(self.files[path].split()) | wanted))


@pytest.fixture
def kernel(monkeypatch, tmp_path):
    def make(processes, granted, root=False):
        model = KernelModel(tmp_path, processes, granted, root)
        monkeypatch.setattr(cgroup, "home", lambda: tmp_path)
        monkeypatch.setattr(cgroup_limits, "_read", model.read)
        monkeypatch.setattr(cgroup_limits, "_write", model.write)
        return model
    yield make
    cgroup_limits._v2_controllers.cache_clear()


def test_a_cgroup_holding_processes_is_emptied_into_its_leaf_first(kernel, tmp_path):
    model = kernel(["101", "102", "103"], granted=["memory"])
    assert cgroup_limits._v2_controllers.__wrapped__() == {"memory"}
    assert model.procs[tmp_path] == [] and model.procs[tmp_path / cgroup.LEAF] == ["101", "102", "103"]


def test_only_the_granted_controllers_are_asked_for(kernel):
    model = kernel(["101"], granted=["memory", "pids", "cpu"])
    assert cgroup_limits._v2_controllers.__wrapped__() == {"memory", "pids"}
    assert model.files[model.home / "cgroup.subtree_control"] == "memory pids"


def test_the_root_keeps_its_processes(kernel, tmp_path):
    model = kernel(["1", "7"], granted=["memory", "pids"], root=True)
    assert cgroup_limits._v2_controllers.__wrapped__() == {"memory", "pids"}
    assert model.procs[tmp_path] == ["1", "7"] and tmp_path / cgroup.LEAF not in model.procs


def test_nothing_granted_moves_nothing(kernel, tmp_path):
    model = kernel(["101"], granted=[])
    assert cgroup_limits._v2_controllers.__wrapped__() == frozenset()
    assert model.procs[tmp_path] == ["101"]
