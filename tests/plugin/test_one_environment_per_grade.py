"""A run that collects two environments is refused: one grade, one environment."""

from __future__ import annotations

import pytest
from conftest import REPO


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["plain", "xdist2"])
def test_two_environments_are_refused_in_one_line(pytester, xdist):
    outcome = pytester.runpytest_subprocess(
        str(REPO / "env_suites"), f"--rootdir={REPO}", "-p", "no:cacheprovider", *xdist,
        f"--nodus-submission={REPO / 'expert' / 'rmsnorm' / 'solution.py'}", f"--nodus-json={pytester.path / 'g.json'}")
    text = outcome.stdout.str() + outcome.stderr.str()
    assert outcome.ret == 4, text  # pytest's usage error: nothing was graded
    suites = sorted(p.parent.name for p in (REPO / "env_suites").glob("*/environment.py"))
    refusals = [line for line in text.splitlines() if f"collects {len(suites)} environment suites" in line]
    assert len(refusals) == 1 and all(name.replace("_", "") in refusals[0].lower().replace("_", "") for name in suites), text
    assert not (pytester.path / "g.json").exists()


def test_one_environment_selected_from_several_is_graded(pytester):
    """-k narrows the run to one environment's tests: that run is a grade."""
    outcome = pytester.runpytest_subprocess(
        str(REPO / "env_suites"), f"--rootdir={REPO}", "-p", "no:cacheprovider", "-k", "TestRMSNorm and public-0",
        f"--nodus-submission={REPO / 'expert' / 'rmsnorm' / 'solution.py'}", f"--nodus-json={pytester.path / 'g.json'}")
    assert outcome.ret == 0, outcome.stdout.str()[-2000:]
    assert (pytester.path / "g.json").exists()
