"""Every cheat of the corpus scores exactly the floor, with the status and flag its file declares.

Each cheat is graded once, sealed, through the real plugin on the CPU. One cheat per
mechanism is graded again under ``-n 2``: the verdict must not depend on xdist.
"""

from __future__ import annotations

import pytest

from expectations import SUITES, corpus

pytestmark = pytest.mark.corpus

CPU = {e.name: e for e in corpus("cpu") if e.known_hole is None and e.env in ("rmsnorm", "attention_backward", "chunked_prefill", "moe_experts")}
# One per mechanism that decides a verdict: the reference, the clock, the process tree, the
# confinement, the tripwires, the time limit, the output checks, the run-time audit.
UNDER_XDIST = ("rmsnorm/cache_by_pointer", "rmsnorm/forge_reported_time", "rmsnorm/forked_worker",
               "rmsnorm/read_sealed", "rmsnorm/patch_timer", "rmsnorm/infinite_loop", "rmsnorm/return_input",
               "attention_backward/sdpa_dense_case")


def _grade(grade, expected, xdist=0):
    suite, options = SUITES[expected.env]
    return grade(expected.path, *options, suite=suite, xdist=xdist, sealed=True)


@pytest.mark.parametrize("name", sorted(CPU))
def test_cheat_scores_the_floor(grade, name):
    expected = CPU[name]
    result = _grade(grade, expected)
    assert expected.matches("cpu", result.document) is None, (expected.matches("cpu", result.document), result.text[-3000:])
    assert result.outcome.ret != 0
    assert "reward 9.0000" not in result.text  # nothing the sandbox prints reaches the report


@pytest.mark.parametrize("name", UNDER_XDIST)
def test_cheat_scores_the_floor_under_xdist(grade, name):
    expected = CPU[name]
    result = _grade(grade, expected, xdist=2)
    assert expected.matches("cpu", result.document) is None, (expected.matches("cpu", result.document), result.text[-3000:])
