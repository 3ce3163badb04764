"""The plugin spawns a grade's sandboxes as pytest configures (grader/standby.py): one per
attempt and the expert's, only in the process that grades, and not the expert's where
--nodus-fail-fast starts it only after a submission has passed a call."""

from __future__ import annotations

from types import SimpleNamespace

from pytest_nodus.grader import standby


def _config(collectonly=False, numprocesses=None, worker=False):
    config = SimpleNamespace(option=SimpleNamespace(collectonly=collectonly, help=False),
                             getoption=lambda name, default=None: numprocesses if name == "numprocesses" else default)
    if worker:
        config.workerinput = {}
    return config


def _options(attempts=1, fail_fast=False):
    files = [f"attempt_{i}.py" for i in range(attempts)]
    return SimpleNamespace(submission=files[0] if files else None, submissions=files, fail_fast=fail_fast)


def test_a_grade_spawns_its_submission_and_its_expert():
    assert standby.wanted(_config(), _options()) == ["expert", "submission"]


def test_a_batch_spawns_every_attempt():
    assert standby.wanted(_config(), _options(3)) == ["expert", "submission:0", "submission:1", "submission:2"]


def test_fail_fast_leaves_the_expert_to_the_first_passed_call():
    assert standby.wanted(_config(), _options(fail_fast=True)) == ["submission"]


def test_an_xdist_controller_spawns_nothing_and_its_workers_do():
    assert standby.wanted(_config(numprocesses=2), _options()) == []
    assert standby.wanted(_config(numprocesses=2, worker=True), _options()) == ["expert", "submission"]


def test_nothing_without_a_submission_or_when_only_collecting():
    assert standby.wanted(_config(), _options(0)) == []
    assert standby.wanted(_config(collectonly=True), _options()) == []
