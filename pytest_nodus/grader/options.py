"""The command line: every ``--nodus-*`` option, its help text, and its validation.

A bad option is one ``ERROR:`` line (``pytest.UsageError``), before anything is graded.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

SUBMISSION_HELP = ("Kernel file to grade (defines the environment's entry point, e.g. kernel). A folder (its *.py "
                   "files), or several paths joined by ':', grades a batch: every attempt against one expert run, "
                   "on the same inputs; --nodus-json then names a folder for each attempt's grade, grades.jsonl "
                   "and grades.png.")
SEALED_HELP = "Directory of hidden sizes (sealed_fixtures/): adds them and marks the grade sealed."
JSON_HELP = "Write the grade as JSON (schema: pytest_nodus/grader/schema/grade.schema.json)."
RERUNS_HELP = "Grade N times with fresh seeds and fuzzed sizes; correct only if all N are (default 1)."
SEED_HELP = "Replay a local grade's seed (printed in the header). Not allowed with --nodus-sealed."
DEVICE_HELP = "auto (default: cuda if available), cuda or cpu (Triton interpreter)."
TIMEOUT_HELP = "Override the environment's per-call time limit, in seconds."
GPU_WAIT_HELP = ("How long a size waits for another grade's hold on its GPU, or for the memory other grades hold "
                 "there, in seconds (default 1800); past it the size is flagged gpu_busy or grader_out_of_memory.")
BASELINES_HELP = ("Also time the environment's context baselines (e.g. FlexAttention) on timed sizes; "
                  "shown in the report and JSON, never in the reward.")
AGENT_REPORT_HELP = ("Also write the agent-facing report (JSON): what an RL pipeline may show the agent; no hidden "
                     "dims, no throughput or claimed time, no text the submission wrote.")
FAIL_FAST_HELP = ("Stop at the first size that is not correct (pytest's --maxfail=1): the reward is the floor "
                  "from then on, so the rest would only cost time. The grade counts what it skipped in not_graded.")
WARM_TOGETHER_HELP = ("A batch: run the attempts' first calls at a size side by side before the size's rounds "
                      "(their compiles and tuning at once, untimed and unread), then the rounds as always. Each "
                      "attempt's own tuning then shares the GPU with the others'. Not under --nodus-fail-fast.")
BATCH_ROOM_HELP = ("A batch: at most N attempts' sandboxes at once (default: as many as the GPU's memory holds at the "
                   "selected sizes; every attempt on the CPU). A larger batch is graded in turns of at most N in "
                   "this one run, each turn against the same expert sandbox (grader/turns.py).")
AGAINST_HELP = ("What the submission is timed against: expert (default), or starting_kernel, the environment's "
                "own starting kernel, for a local check where the grader's experts are not installed (an agent's "
                "workspace): a speedup, never a reward. Not with --nodus-sealed.")
TRUSTED_HELP = ("Calibration only: the submission is trusted code (the expert graded against itself). "
                "Kernels the environment forbids are recorded as waived instead of flagged, and the "
                "libraries and kernels it keeps out of submissions are left in; every other check still applies. Never for an agent's submission.")


def pytest_addoption(parser):
    group = parser.getgroup("nodus", "pytest-nodus sealed kernel grading")
    group.addoption("--nodus-submission", metavar="PATH", help=SUBMISSION_HELP)
    group.addoption("--nodus-sealed", metavar="DIR", help=SEALED_HELP)
    group.addoption("--nodus-json", metavar="FILE", help=JSON_HELP)
    group.addoption("--nodus-agent-report", metavar="FILE", help=AGENT_REPORT_HELP)
    group.addoption("--nodus-reruns", metavar="N", default="1", help=RERUNS_HELP)
    group.addoption("--nodus-seed", metavar="SEED", help=SEED_HELP)
    group.addoption("--nodus-device", metavar="KIND", default="auto", help=DEVICE_HELP)
    group.addoption("--nodus-call-timeout", metavar="SECONDS", help=TIMEOUT_HELP)
    group.addoption("--nodus-gpu-wait", metavar="SECONDS", help=GPU_WAIT_HELP)
    group.addoption("--nodus-baselines", action="store_true", default=False, help=BASELINES_HELP)
    group.addoption("--nodus-trusted", action="store_true", default=False, help=TRUSTED_HELP)
    group.addoption("--nodus-against", metavar="KERNEL", default="expert", help=AGAINST_HELP)
    group.addoption("--nodus-fail-fast", action="store_true", default=False, help=FAIL_FAST_HELP)
    group.addoption("--nodus-warm-together", action="store_true", default=False, help=WARM_TOGETHER_HELP)
    group.addoption("--nodus-batch-room", metavar="N", help=BATCH_ROOM_HELP)


# What a submission can be timed against (--nodus-against).
AGAINST = ("expert", "starting_kernel")


class Options:
    """The validated command line."""

    def __init__(self, config):
        get = config.getoption
        given = [Path(p) for p in get("nodus_submission").split(os.pathsep) if p] if get("nodus_submission") else []
        # A batch: a folder of attempts or several paths, each attempt graded as its own grade
        # would be, against one expert run (grader/rounds.py).
        self.batch = len(given) > 1 or any(p.is_dir() for p in given)
        from pytest_nodus.grader.batch_files import attempt_files

        self.submissions = attempt_files(given)
        self.submission = self.submissions[0] if self.submissions else None
        self.sealed_dir = Path(get("nodus_sealed")) if get("nodus_sealed") else None
        self.json_path = Path(get("nodus_json")) if get("nodus_json") else None
        self.agent_report_path = Path(get("nodus_agent_report")) if get("nodus_agent_report") else None
        self.reruns = _positive_int(get("nodus_reruns"), "--nodus-reruns")
        self.device_request = get("nodus_device")
        self.call_timeout = _positive_float(get("nodus_call_timeout"), "--nodus-call-timeout")
        self.gpu_wait = _positive_float(get("nodus_gpu_wait"), "--nodus-gpu-wait")
        self.baselines = bool(get("nodus_baselines"))
        self.trusted = bool(get("nodus_trusted"))
        self.fail_fast = bool(get("nodus_fail_fast"))
        self.warm_together = bool(get("nodus_warm_together"))
        room = get("nodus_batch_room")
        self.batch_room = None if room is None else _positive_int(room, "--nodus-batch-room")
        self.against = get("nodus_against")
        self.seed = None if get("nodus_seed") is None else _non_negative_int(get("nodus_seed"), "--nodus-seed")
        for path in self.submissions:
            if not path.is_file():
                raise pytest.UsageError(f"pytest-nodus: --nodus-submission {path}: no such file")
        if given and not self.submissions:
            raise pytest.UsageError(f"pytest-nodus: --nodus-submission {given[0]}: no kernel files (*.py) there")
        if self.batch and self.json_path is not None and self.json_path.is_file():
            raise pytest.UsageError(f"pytest-nodus: --nodus-json {self.json_path}: a batch writes a folder of grades "
                                    "there, not one file")
        if self.sealed_dir is not None and not self.sealed_dir.is_dir():
            raise pytest.UsageError(f"pytest-nodus: --nodus-sealed {self.sealed_dir}: no such directory")
        if self.sealed_dir is not None and self.seed is not None:
            raise pytest.UsageError("pytest-nodus: --nodus-seed cannot be used with --nodus-sealed "
                                    "(a sealed grade draws a fresh secret seed)")
        if self.against not in AGAINST:
            raise pytest.UsageError(f"pytest-nodus: --nodus-against must be {' or '.join(AGAINST)}, not {self.against!r}")
        if self.against != "expert" and self.sealed_dir is not None:
            raise pytest.UsageError("pytest-nodus: a sealed grade is timed against the expert (--nodus-against)")
        if self.device_request not in ("auto", "cpu", "cuda"):
            raise pytest.UsageError(f"pytest-nodus: --nodus-device must be auto, cpu or cuda, not {self.device_request!r}")
        for option, path in (("--nodus-json", self.json_path), ("--nodus-agent-report", self.agent_report_path)):
            if path is not None and not path.parent.exists():
                raise pytest.UsageError(f"pytest-nodus: {option} {path}: directory does not exist")

    @property
    def sealed(self) -> bool:
        return self.sealed_dir is not None

    @property
    def hypothesis_database(self):
        """Sealed grades keep no database. Local runs keep Hypothesis's failures in the user's
        cache; so does everything else Hypothesis stores: never in the directory the check runs
        from, which may be an agent's workspace."""
        from hypothesis.configuration import set_hypothesis_home_dir

        set_hypothesis_home_dir(str(user_cache() / "hypothesis"))
        if self.sealed:
            return None
        from hypothesis.database import DirectoryBasedExampleDatabase

        return DirectoryBasedExampleDatabase(str(user_cache() / "hypothesis" / "examples"))


def user_cache() -> Path:
    """pytest-nodus's folder of the user's cache (compile caches, Hypothesis's database)."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "pytest-nodus"


def expert_cache() -> Path:
    """The trusted sandboxes' compile caches (Triton's, inductor's) and the cuDNN experts'
    plans, kept across grades."""
    return user_cache() / "expert"


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
