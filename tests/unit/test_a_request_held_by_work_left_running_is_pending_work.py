"""A call's arm or report held past its limit on the GPU is pending_work.

Neither runs the kernel's code; the harness's synchronise in them waits only on GPU work
the submission queued from a thread of its own after its call returned
(tests/cheats/moe_experts/contend_with_the_experts_choice.py held a report 20-30 s on an
H100). The readings here are built by hand: no sandbox, no GPU.
"""

from __future__ import annotations

from pytest_nodus.grader import checks
from pytest_nodus.grader.reading import Reading


def _reading(**held_ms):
    return Reading(report={"ok": True}, outputs=[], window_ms=1.0, child_ms=None, children_at_open=[],
                   opened_boot_ticks=0, pid=0, _clock=None, held_ms=held_ms)


def test_a_report_held_for_seconds_is_pending_work():
    found = checks.held(_reading(arm=4.0, report=30_000.0), cuda=True)
    assert [f.code for f in found] == ["pending_work"] and "report" in found[0].detail


def test_an_arm_held_for_seconds_is_pending_work():
    found = checks.held(_reading(arm=checks.HELD_LIMIT_MS + 1, report=1.0), cuda=True)
    assert [f.code for f in found] == ["pending_work"] and "arm" in found[0].detail


def test_an_honest_call_s_milliseconds_are_nothing():
    assert checks.held(_reading(arm=14.0, report=1.0), cuda=True) == []


def test_the_cpu_is_not_held_to_it():
    # A frozen CPU sandbox runs nothing; what its threads run is idle work's to count.
    assert checks.held(_reading(arm=30_000.0, report=30_000.0), cuda=False) == []
