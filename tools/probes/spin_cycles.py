"""A pytest plugin for the grader's process: the pre-call GPU spin set from the environment.

    PYTHONPATH=.:tools/probes NODUS_PROBE_SPIN_CYCLES=2000000 python3 -m pytest env_suites/attention_backward -p spin_cycles ...

For an A/B of ``pytest_nodus.clock.SPIN_CYCLES`` in one session on one GPU (run 47 set it from
2M to 8M cycles). The sandbox never reads it: the spin is queued by the grader's clock.
"""

import os

from pytest_nodus import clock


def pytest_configure(config):
    cycles = os.environ.get("NODUS_PROBE_SPIN_CYCLES")
    if cycles:
        clock.SPIN_CYCLES = int(cycles)


def pytest_report_header(config):
    return f"probe: grader spin {clock.SPIN_CYCLES} cycles"
