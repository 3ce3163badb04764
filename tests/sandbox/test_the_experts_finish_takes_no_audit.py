"""The expert's end of a size takes no kernel audit (nobody reads a trusted role's), and its
profiler runs on through it: the next size's calls are timed under a running profiler, as
every submission's are, and an audit asked later still reports."""

from __future__ import annotations

from env_suites.chunked_prefill.environment import ENVIRONMENT as PREFILL
from pytest_nodus.grader import devices
from pytest_nodus.grader.sandbox_pool import SandboxPool

from conftest import REPO

CPU = devices.Device("cpu", None, "cpu", None)
DIMS = PREFILL.profile("cpu").sizes[0]


def test_the_profiler_runs_on_through_an_unaudited_finish():
    pool = SandboxPool(REPO / "expert" / "chunked_prefill" / "solution.py", CPU, audit=True, expert_cache=None,
                       trusted=False)
    try:
        expert = pool.get(PREFILL, "expert", DIMS)
        assert expert.audit  # an environment that forbids library kernels audits every role it runs
        assert expert.finish(60.0, audit=False)["audit"] is None
        report = expert.finish(60.0)["audit"]
        assert report is not None and "error" not in report
    finally:
        pool.close()
