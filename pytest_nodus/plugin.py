"""pytest-nodus plugin: options, parametrization, fixtures, result gathering, report.

How a grade flows through pytest:

1. ``pytest_configure`` checks the options (one ``ERROR:`` line for a bad one) and picks the
   grade seed: ``--nodus-seed`` or a fresh one (local runs print it; sealed runs never show
   it). Under xdist the controller picks it and hands it to every worker.
2. ``pytest_generate_tests`` parametrizes ``test_size`` over public (+ hidden) sizes and
   every graded test over ``--nodus-reruns``. Hidden ids are ``hidden-N``: no dims.
3. Each graded test grades in a sandbox and attaches its verdict to its report.
4. ``pytest_runtest_logreport`` (in the controller under xdist) gathers the verdicts; a graded
   test that produced none (its worker died) counts as a failed size.
5. ``pytest_sessionfinish`` folds them into the grade, writes ``--nodus-json``, and makes the
   exit status non-zero unless the grade is correct.

Nothing here imports torch until a grade is actually requested.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from pytest_nodus import __version__

SUBMISSION_HELP = "Kernel file to grade (defines the environment's entry point, e.g. kernel)."
SEALED_HELP = "Directory of hidden sizes (sealed_fixtures/): adds them and marks the grade sealed."
JSON_HELP = "Write the grade as JSON (schema: pytest_nodus/schema/grade.schema.json)."
RERUNS_HELP = "Grade N times with fresh seeds and fuzzed sizes; correct only if all N are (default 1)."
SEED_HELP = "Replay a local grade's seed (printed in the header). Not allowed with --nodus-sealed."
DEVICE_HELP = "auto (default: cuda if available), cuda or cpu (Triton interpreter)."
TIMEOUT_HELP = "Override the environment's per-call time limit, in seconds."
GPU_WAIT_HELP = ("How long a size waits for another grade's hold on its GPU, in seconds (default 1800); "
                 "past it the size is flagged gpu_busy.")
BASELINES_HELP = ("Also time the environment's context baselines (e.g. FlexAttention) on timed sizes; "
                  "shown in the report and JSON, never in the reward.")
TRUSTED_HELP = ("Calibration only: the submission is trusted code (the expert graded against itself). "
                "Kernels the environment forbids are recorded as waived instead of flagged, and the "
                "libraries and kernels it keeps out of submissions are left in; every other check still applies. Never for an agent's submission.")


def pytest_addoption(parser):
    group = parser.getgroup("nodus", "pytest-nodus sealed kernel grading")
    group.addoption("--nodus-submission", metavar="PATH", help=SUBMISSION_HELP)
    group.addoption("--nodus-sealed", metavar="DIR", help=SEALED_HELP)
    group.addoption("--nodus-json", metavar="FILE", help=JSON_HELP)
    group.addoption("--nodus-reruns", metavar="N", default="1", help=RERUNS_HELP)
    group.addoption("--nodus-seed", metavar="SEED", help=SEED_HELP)
    group.addoption("--nodus-device", metavar="KIND", default="auto", help=DEVICE_HELP)
    group.addoption("--nodus-call-timeout", metavar="SECONDS", help=TIMEOUT_HELP)
    group.addoption("--nodus-gpu-wait", metavar="SECONDS", help=GPU_WAIT_HELP)
    group.addoption("--nodus-baselines", action="store_true", default=False, help=BASELINES_HELP)
    group.addoption("--nodus-trusted", action="store_true", default=False, help=TRUSTED_HELP)


class Options:
    """The validated command line."""

    def __init__(self, config):
        get = config.getoption
        self.submission = Path(get("nodus_submission")) if get("nodus_submission") else None
        self.sealed_dir = Path(get("nodus_sealed")) if get("nodus_sealed") else None
        self.json_path = Path(get("nodus_json")) if get("nodus_json") else None
        self.reruns = _positive_int(get("nodus_reruns"), "--nodus-reruns")
        self.device_request = get("nodus_device")
        self.call_timeout = _positive_float(get("nodus_call_timeout"), "--nodus-call-timeout")
        self.gpu_wait = _positive_float(get("nodus_gpu_wait"), "--nodus-gpu-wait")
        self.baselines = bool(get("nodus_baselines"))
        self.trusted = bool(get("nodus_trusted"))
        self.seed = None if get("nodus_seed") is None else _non_negative_int(get("nodus_seed"), "--nodus-seed")
        if self.submission is not None and not self.submission.is_file():
            raise pytest.UsageError(f"pytest-nodus: --nodus-submission {self.submission}: no such file")
        if self.sealed_dir is not None and not self.sealed_dir.is_dir():
            raise pytest.UsageError(f"pytest-nodus: --nodus-sealed {self.sealed_dir}: no such directory")
        if self.sealed_dir is not None and self.seed is not None:
            raise pytest.UsageError("pytest-nodus: --nodus-seed cannot be used with --nodus-sealed "
                                    "(a sealed grade draws a fresh secret seed)")
        if self.device_request not in ("auto", "cpu", "cuda"):
            raise pytest.UsageError(f"pytest-nodus: --nodus-device must be auto, cpu or cuda, not {self.device_request!r}")
        if self.json_path is not None and not self.json_path.parent.exists():
            raise pytest.UsageError(f"pytest-nodus: --nodus-json {self.json_path}: directory does not exist")

    @property
    def sealed(self) -> bool:
        return self.sealed_dir is not None

    @property
    def hypothesis_database(self):
        # Sealed grades leave nothing behind; local runs keep Hypothesis's failure database.
        if self.sealed:
            return None
        from hypothesis.database import DirectoryBasedExampleDatabase

        return DirectoryBasedExampleDatabase(".hypothesis/examples")


def _positive_int(value, option) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"pytest-nodus: {option} must be a positive integer, not {value!r}") from None
    if number < 1:
        raise pytest.UsageError(f"pytest-nodus: {option} must be a positive integer, not {value!r}")
    return number


def _non_negative_int(value, option) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = -1
    if number < 0:
        raise pytest.UsageError(f"pytest-nodus: {option} must be a non-negative integer, not {value!r}")
    return number


def _positive_float(value, option) -> float | None:
    if value is None:
        return None
    try:
        number = float(value)
    except ValueError:
        number = -1.0
    if not number > 0:
        raise pytest.UsageError(f"pytest-nodus: {option} must be a positive number of seconds, not {value!r}")
    return number


class NodusSession:
    """Per-process grade state; in the controller it also gathers every worker's verdicts."""

    def __init__(self, config, options: Options):
        self.config = config
        self.options = options
        self.started = time.monotonic()
        workerinput = getattr(config, "workerinput", None)
        if workerinput is not None and "nodus_seed" in workerinput:
            self.grade_seed = int(workerinput["nodus_seed"])
        elif options.seed is not None:
            self.grade_seed = options.seed
        else:
            from pytest_nodus.inputs import fresh_grade_seed

            self.grade_seed = fresh_grade_seed()
        self.results: list[dict] = []
        self.usage_errors: list[str] = []
        self.planned_dims: dict[str, list] = {}
        self.expected: set[str] = set()
        self.reported: set[str] = set()
        self.grader = None
        self.device = None
        self.document = None

    @property
    def is_worker(self) -> bool:
        return hasattr(self.config, "workerinput")

    def device_choice(self):
        if self.device is None:
            from pytest_nodus import devices

            try:
                self.device = devices.choose(self.options.device_request)
            except ValueError as exc:
                raise pytest.UsageError(f"pytest-nodus: {exc}") from None
        return self.device

    def get_grader(self):
        if self.grader is None:
            from pytest_nodus.grading import Grader

            cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "pytest-nodus" / "expert"
            self.grader = Grader(self.options.submission, self.device_choice(), self.grade_seed, expert_cache=cache,
                                 baselines=self.options.baselines, trusted=self.options.trusted)
            self.grader.planned_dims = self.planned_dims
        return self.grader

    # -- pytest hooks ---------------------------------------------------------------------
    def pytest_report_header(self, config):
        if self.options.submission is None:
            return None
        seed = "secret (sealed)" if self.options.sealed else f"{self.grade_seed} (replay: --nodus-seed={self.grade_seed})"
        return [f"nodus: submission {self.options.submission}, device {self.device_choice().describe()}, "
                f"{'sealed' if self.options.sealed else 'local check'}, reruns {self.options.reruns}, seed {seed}"
                f"{', TRUSTED (forbidden kernels waived)' if self.options.trusted else ''}"]

    def pytest_configure_node(self, node):  # xdist controller -> worker
        node.workerinput["nodus_seed"] = self.grade_seed

    def pytest_generate_tests(self, metafunc):
        env = getattr(metafunc.cls, "environment", None)
        if env is None or self.options.submission is None:
            return
        if "nodus_rerun" in metafunc.fixturenames and self.options.reruns > 1:
            reruns = range(self.options.reruns)
            metafunc.parametrize("nodus_rerun", list(reruns), ids=[f"r{n}" for n in reruns])
        if "nodus_size" in metafunc.fixturenames:
            from pytest_nodus.environment import load_hidden_sizes, sizes_to_grade

            kind = self.device_choice().kind
            hidden = ()
            if self.options.sealed:
                try:
                    hidden = load_hidden_sizes(self.options.sealed_dir, env, kind)
                except ValueError as exc:
                    # Raised from collection_modifyitems: pytest then prints one ERROR line.
                    self.usage_errors.append(f"pytest-nodus: {exc}")
            sizes = sizes_to_grade(env, kind, hidden)
            self.planned_dims[env.name] = [s.dims for s in sizes]
            metafunc.parametrize("nodus_size", sizes, ids=[s.id for s in sizes])

    @pytest.hookimpl(trylast=True)  # after -k/-m deselection: a partial run grades what it selected
    def pytest_collection_modifyitems(self, session, config, items):
        if self.usage_errors:
            raise pytest.UsageError(self.usage_errors[0])
        graded = [item for item in items if _is_graded(item.nodeid)]
        if graded and self.options.submission is None:
            raise pytest.UsageError("pytest-nodus: grading an environment needs --nodus-submission=PATH")
        self.expected.update(item.nodeid for item in graded)

    def pytest_xdist_node_collection_finished(self, node, ids):
        self.expected.update(i for i in ids if _is_graded(i))

    def pytest_runtest_logreport(self, report):
        if not _is_graded(report.nodeid):
            return
        for name, value in report.user_properties:
            if name == "nodus_result" and report.nodeid not in self.reported:
                self.reported.add(report.nodeid)
                self.results.append(value)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if self.grader is not None:
            self.grader.close()
        if self.is_worker or self.options.submission is None or not self.expected:
            return
        from pytest_nodus import environment, report

        for nodeid in sorted(self.expected - self.reported):
            # A graded test with no verdict: its worker died or it errored before grading.
            size_id, rerun = _graded_test(nodeid)
            self.results.append({"id": size_id, "kind": size_id.split("-", 1)[0],
                                 "rerun": rerun, "status": "error", "timed": True, "speedup": None,
                                 "flags": [{"size": size_id, "code": "no_result",
                                            "detail": "this graded test produced no result (its worker died, "
                                                      "or the grader raised: see the test's report)"}]})
        device = self.device_choice()
        meta = {
            "submission": {"path": str(self.options.submission),
                           "sha256": environment.file_sha256(self.options.submission)},
            "device": {"kind": device.kind, "name": device.name, "description": device.describe()},
            "sealed": self.options.sealed,
            "trusted": self.options.trusted,
            "seed": None if self.options.sealed else self.grade_seed,
            "wall_s": round(time.monotonic() - self.started, 3),
            "grader": _grader_versions(),
        }
        self.document = report.build_grade(self.results, meta, self.options.reruns)
        if self.options.json_path is not None:
            report.write_json(self.document, self.options.json_path)
        if self.document["status"] != "correct" and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter):
        if self.document is None:
            return
        from pytest_nodus import report

        terminalreporter.write_sep("=", "pytest-nodus grade")
        for line in report.terminal_lines(self.document):
            terminalreporter.write_line(line)


def _is_graded(nodeid: str) -> bool:
    return "::test_size[" in nodeid or "::test_fuzzed_sizes" in nodeid


def _graded_test(nodeid: str) -> tuple[str, int]:
    """(size id, rerun) of a graded test's node id, e.g. ``test_size[r2-public-0:M33xN1000]``.

    The rerun id (``rN``, present when --nodus-reruns > 1) comes first: ``nodus_rerun`` is
    parametrized before ``nodus_size``. Under xdist the controller has only node ids."""
    if "::test_fuzzed_sizes" in nodeid:
        match = re.fullmatch(r".*\[r(\d+)\]", nodeid)
        return "fuzz", int(match.group(1)) if match else 0
    param = nodeid.split("[", 1)[-1].rstrip("]")
    match = re.fullmatch(r"r(\d+)-(.+)", param)
    return (match.group(2), int(match.group(1))) if match else (param, 0)


def _grader_versions() -> dict:
    import torch

    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    return {"version": __version__, "torch": torch.__version__, "triton": triton_version}


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
def nodus_grade(request, _nodus_session):
    """The grader, bound to the current test (see :class:`pytest_nodus.suite.GradeRunner`)."""
    from pytest_nodus.suite import GradeRunner

    grader = _nodus_session.get_grader()
    if _nodus_session.options.call_timeout is not None:
        grader.call_timeout_override = _nodus_session.options.call_timeout
    if _nodus_session.options.gpu_wait is not None:
        grader.gpu_wait_s = _nodus_session.options.gpu_wait
    return GradeRunner(grader, request.node, _nodus_session.options)


def pytest_configure(config):
    options = Options(config)
    config.pluginmanager.register(NodusSession(config, options), "nodus-session")
    config.addinivalue_line("markers", "nodus_graded: a test whose verdict enters the pytest-nodus grade")
