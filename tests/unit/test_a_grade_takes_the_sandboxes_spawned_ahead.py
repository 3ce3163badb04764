"""A warm host's grade takes the sandboxes spawned before it was asked for (grader/standby.py
spawn_ahead), only those whose process role and preload fit it, spawns what they lack and
closes what it does not need: an expert spawned ahead with the compiler preloaded for a GPU
grade must not serve a CPU grade, whose expert imports no compiler."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from pytest_nodus.grader import standby


@dataclass
class FakeSpawned:
    role: str
    preload: tuple[str, ...]
    alive: bool = True
    closed: list = field(default_factory=list)

    def close(self):
        self.closed.append(True)
        self.alive = False


@pytest.fixture
def spawned(monkeypatch):
    made = []

    def fake_spawn(process_role, cache_dir, preload=()):
        made.append(FakeSpawned(process_role, preload))
        return made[-1]

    monkeypatch.setattr(standby, "spawn", fake_spawn)
    monkeypatch.setattr(standby, "_ahead", [])
    return made


def grading(attempts=1, device="cuda", fail_fast=False):
    config = SimpleNamespace(option=SimpleNamespace(collectonly=False, help=False), getoption=lambda *a: None)
    options = SimpleNamespace(submission="k.py", submissions=["k.py"] * attempts, fail_fast=fail_fast,
                              device_request=device)
    return config, options


def test_the_grade_takes_what_was_spawned_ahead_and_spawns_nothing(spawned):
    standby.spawn_ahead("cuda", 1)
    ahead = list(spawned)
    taken = standby.spawn_for(*grading())
    assert taken == {"expert": ahead[0], "submission": ahead[1]}
    assert ahead[0].preload == standby.TRUSTED_PRELOAD and len(spawned) == 2
    assert standby._ahead == [] and not any(s.closed for s in ahead)


def test_an_expert_preloaded_for_another_device_is_closed_and_spawned_anew(spawned):
    standby.spawn_ahead("cuda", 1)
    gpu_expert, submission = spawned
    taken = standby.spawn_for(*grading(device="cpu"))
    assert taken["submission"] is submission
    assert taken["expert"] is not gpu_expert and taken["expert"].preload == ()
    assert gpu_expert.closed


def test_a_batch_spawns_the_attempts_not_spawned_ahead(spawned):
    standby.spawn_ahead("cpu", 1)
    taken = standby.spawn_for(*grading(attempts=3, device="cpu"))
    assert sorted(taken) == ["expert", "submission:0", "submission:1", "submission:2"]
    assert len(spawned) == 4 and taken["submission:0"] is spawned[1]


def test_what_the_grade_does_not_need_is_closed(spawned):
    standby.spawn_ahead("cpu", 2)
    taken = standby.spawn_for(*grading(device="cpu", fail_fast=True))  # the expert starts only later
    assert list(taken) == ["submission"]
    assert spawned[0].closed and spawned[2].closed and not spawned[1].closed


def test_a_sandbox_that_died_in_standby_is_not_taken(spawned):
    standby.spawn_ahead("cpu", 1)
    spawned[1].alive = False
    taken = standby.spawn_for(*grading(device="cpu"))
    assert taken["submission"] is spawned[2]
