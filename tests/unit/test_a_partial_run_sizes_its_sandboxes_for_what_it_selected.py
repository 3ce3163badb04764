"""Sandboxes' arenas, the GPU ledger's reservation and a batch's room are sized for the timed
sizes a run selects (after -k), not for every size of the environment: a size never called
holds no memory, and a batch graded at its small sizes is not split into turns for its largest."""

from __future__ import annotations

from types import SimpleNamespace

from env_suites.attention_backward.environment import ENVIRONMENT as ATTENTION
from pytest_nodus.grader import gpu_ledger
from pytest_nodus.grader.environment import sizes_to_grade
from pytest_nodus.grader.gpu_ledger import GIB, Ledger
from pytest_nodus.grader.session import NodusSession

H100 = 79 * GIB  # what the H100's 80 GB card reports as its total
SIZES = {size.id.split(":")[0]: size for size in sizes_to_grade(ATTENTION, "cuda", ())}


class _Suite:
    environment = ATTENTION


def _items(*ids):
    return [SimpleNamespace(cls=_Suite, callspec=SimpleNamespace(params={"nodus_size": SIZES[i]})) for i in ids]


def _session(attempts: int) -> NodusSession:
    session = NodusSession.__new__(NodusSession)  # no pytest config: only the planning is under test
    session.options = SimpleNamespace(batch=attempts > 1, submissions=["attempt.py"] * attempts, batch_room=None)
    session.planned_dims = {ATTENTION.name: [size.dims for size in SIZES.values()]}
    session.usage_errors = []
    session.device = SimpleNamespace(kind="cuda")
    return session


def test_the_planned_sizes_are_the_selected_ones():
    session = _session(1)
    session._plan_selected(_items("public-0", "public-3", "public-0"))  # a size of several reruns counts once
    assert session.planned_dims[ATTENTION.name] == [SIZES["public-0"].dims, SIZES["public-3"].dims]
    assert session.usage_errors == []


def test_a_batch_at_small_sizes_fits_where_the_largest_would_not(monkeypatch):
    monkeypatch.setattr(gpu_ledger, "for_device", lambda device: Ledger("gpu0", capacity=H100))
    small = _session(3)
    small._plan_selected(_items("public-0"))  # 0.3 GB a call: three attempts fit
    assert small.turns == [[0, 1, 2]]
    large = _session(3)
    large._plan_selected(_items("public-0", "public-2"))  # 2.5 GB a call: one attempt per turn on an H100
    assert large.turns == [[0], [1], [2]]
    assert small.usage_errors == large.usage_errors == []


def test_a_run_that_selects_no_timed_size_plans_none():
    session = _session(3)
    session._plan_selected([])  # -k fuzz: the fuzz's sizes are sized as they come
    assert session.planned_dims[ATTENTION.name] == [] and session.usage_errors == []
