"""A cuDNN expert's plan is built once per host and loaded by later grades
(pytest_nodus/trusted/cudnn_plans.py); anything wrong with a stored plan builds it again, and a sandbox
sees the store only where it runs a trusted file."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_nodus.grader import sandbox_env
from pytest_nodus.trusted import cudnn_plans

STEPS = ("validate", "build_operation_graph", "create_execution_plans", "check_support", "build_plans")


class FakeGraph:
    """Records what was asked of it; a plan it built serializes as ``plan:<name>``."""

    def __init__(self, name: str):
        self.name, self.asked, self.loaded = name, [], None

    def __getattr__(self, step):
        if step not in STEPS:
            raise AttributeError(step)
        return lambda *args: self.asked.append(step)

    def serialize(self):
        assert "build_plans" in self.asked, "serialized before its plan was built"
        return list(f"plan:{self.name}".encode())

    def deserialize(self, handle, blob):
        if bytes(blob)[:5] != b"plan:":
            raise RuntimeError("not a plan")
        self.loaded = bytes(blob)


@pytest.fixture
def store(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(cudnn_plans.CACHE_VARIABLE, str(tmp_path))
    monkeypatch.setattr(cudnn_plans, "versions", lambda: ("H200", (9, 0), 91900, "1.32.0"))
    return tmp_path


def _build(description, graphs: list):
    def declare():
        graphs.append(FakeGraph(f"g{len(graphs)}"))
        return graphs[-1]
    return cudnn_plans.build(declare, None, description, ["A", "FALLBACK"])


def test_the_second_grade_loads_the_plan_the_first_built(store):
    first, second = [], []
    built = _build(("sdpa", 8, 128), first)
    assert built.asked == list(STEPS) and built.loaded is None
    loaded = _build(("sdpa", 8, 128), second)
    assert loaded.asked == [] and loaded.loaded == b"plan:g0"
    assert len(second) == 1


def test_another_graph_or_another_build_of_cudnn_builds_its_own(store, monkeypatch):
    _build(("sdpa", 8, 128), [])
    assert _build(("sdpa", 8, 256), []).asked == list(STEPS)
    monkeypatch.setattr(cudnn_plans, "versions", lambda: ("H200", (9, 0), 92000, "1.32.0"))
    assert _build(("sdpa", 8, 128), []).asked == list(STEPS)


def test_a_plan_that_does_not_load_is_built_on_a_fresh_graph_and_stored_again(store):
    path = cudnn_plans.plan_path(str(store), ("sdpa", 8, 128), cudnn_plans.versions())
    path.parent.mkdir(parents=True)
    path.write_bytes(b"half a plan")
    graphs = []
    built = _build(("sdpa", 8, 128), graphs)
    assert len(graphs) == 2 and built is graphs[1]  # the failed load's graph is dropped
    assert built.asked == list(STEPS)
    assert path.read_bytes() == b"plan:g1"
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no partial file left


def test_without_a_trusted_store_every_plan_is_built(monkeypatch):
    monkeypatch.delenv(cudnn_plans.CACHE_VARIABLE, raising=False)
    assert _build(("sdpa", 8, 128), []).asked == list(STEPS)
    assert _build(("sdpa", 8, 128), []).asked == list(STEPS)


def test_only_a_trusted_sandbox_is_told_where_the_store_is(tmp_path):
    variable = cudnn_plans.CACHE_VARIABLE
    expert = sandbox_env.variables(tmp_path / "scratch", tmp_path / "expert", None, "expert")
    assert expert[variable] == str(tmp_path / "expert")
    submission = sandbox_env.variables(tmp_path / "scratch", tmp_path / "expert", None, "submission")
    assert variable not in submission
    assert variable not in sandbox_env.variables(tmp_path / "scratch", None, None, "submission")
