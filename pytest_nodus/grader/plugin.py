"""pytest-nodus plugin (the ``pytest11`` entry point): options, fixtures, and the session.

The hooks that carry a grade live on :class:`~pytest_nodus.grader.session.NodusSession`,
registered here at configure time; ``grader/session.py`` says how a grade flows through
pytest. Nothing here imports torch until a grade is actually requested.
"""

from __future__ import annotations

import pytest

from pytest_nodus.grader import bytecode
from pytest_nodus.grader.options import Options, pytest_addoption  # noqa: F401  (a hook)
from pytest_nodus.grader.session import NodusSession
from pytest_nodus.grader.suite import GRADED_MARKER


@pytest.fixture(scope="session")
def _nodus_session(pytestconfig) -> NodusSession:
    session = pytestconfig.pluginmanager.get_plugin("nodus-session")
    if session is None or session.options.submission is None:
        pytest.fail("pytest-nodus: grading needs --nodus-submission=PATH", pytrace=False)
    return session


@pytest.fixture
def nodus_rerun() -> int:
    """Which of the --nodus-reruns grades a test belongs to (parametrized when N > 1)."""
    return 0


@pytest.fixture
def nodus_turn() -> int:
    """Which turn of a batch larger than its room a test grades (grader/turns.py;
    parametrized when the batch needs more than one)."""
    return 0


@pytest.fixture
def nodus_grade(request, _nodus_session, nodus_turn):
    """The grader, bound to the current test and its turn's attempts (see
    :class:`pytest_nodus.suite.GradeRunner`)."""
    from pytest_nodus.grader.suite import GradeRunner

    grader = _nodus_session.get_grader()
    if _nodus_session.options.call_timeout is not None:
        grader.call_timeout_override = _nodus_session.options.call_timeout
    if _nodus_session.options.gpu_wait is not None:
        grader.gpu_wait_s = _nodus_session.options.gpu_wait
    return GradeRunner(grader, request.node, _nodus_session.options, _nodus_session.turns[nodus_turn])


def pytest_configure(config):
    options = Options(config)
    # In a batch each attempt stops at its own first failure (grader/rounds.py), the run does not.
    if options.fail_fast and not config.option.maxfail and not options.batch:
        # Before xdist's controller reads it (its configure hook runs last), and passed on to
        # every worker with the rest of the command line.
        config.option.maxfail = 1
    if options.submission is not None:
        _no_closing_collections(config)
        bytecode.write_none_into()
    config.pluginmanager.register(NodusSession(config, options), "nodus-session")
    config.addinivalue_line("markers", f"{GRADED_MARKER}: a test whose verdict enters the pytest-nodus grade")


def _no_closing_collections(config) -> None:
    """A grade's end runs no forced garbage collections. pytest's unraisable-exception plugin
    collects five times as the session ends, to report what a test's garbage raised: with
    torch's heap, 0.38 s of a sealed CPU grade (docs/results/throughput.md), in every grade;
    no verdict reads those warnings (the grade is the JSON). The key is pytest's own (its pytester sets it so);
    a pytest without it collects no more than once."""
    try:
        from _pytest.unraisableexception import gc_collect_iterations_key
    except ImportError:
        return
    config.stash[gc_collect_iterations_key] = 0
