"""A bad command line gets one clear line, never a traceback."""

from __future__ import annotations

import pytest
from conftest import REPO


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def run(pytester, *args):
    return pytester.runpytest_subprocess(str(REPO / "env_suites" / "rmsnorm"), f"--rootdir={REPO}",
                                         "-p", "no:cacheprovider", *args)


@pytest.mark.parametrize("args, message", [
    (["--nodus-submission=/no/such/kernel.py"], "pytest-nodus: --nodus-submission /no/such/kernel.py: no such file"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-sealed=/no/such/dir"], "pytest-nodus: --nodus-sealed /no/such/dir: no such directory"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-reruns=0"], "pytest-nodus: --nodus-reruns must be a positive integer, not '0'"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-reruns=x"], "pytest-nodus: --nodus-reruns must be a positive integer, not 'x'"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-device=tpu"], "pytest-nodus: --nodus-device must be auto, cpu or cuda, not 'tpu'"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-gpu-wait=0"], "pytest-nodus: --nodus-gpu-wait must be a positive number*"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-sealed=sealed_fixtures", "--nodus-seed=3"],
     "pytest-nodus: --nodus-seed cannot be used with --nodus-sealed*"),
    ([], "pytest-nodus: grading an environment needs --nodus-submission=PATH"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-against=solution"],
     "pytest-nodus: --nodus-against must be expert or starting_kernel, not 'solution'"),
    ([f"--nodus-submission={SOLUTION}", "--nodus-sealed=sealed_fixtures", "--nodus-against=starting_kernel"],
     "pytest-nodus: a sealed grade is timed against the expert (--nodus-against)"),
])
def test_bad_options_get_one_line(pytester, args, message):
    result = run(pytester, *[a.replace("sealed_fixtures", str(REPO / "sealed_fixtures")) for a in args])
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"ERROR: {message}"])
    assert "Traceback" not in result.stderr.str()


def test_sealed_dir_without_this_environment(pytester, tmp_path):
    result = run(pytester, f"--nodus-submission={SOLUTION}", f"--nodus-sealed={tmp_path}", "--nodus-device=cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-nodus: no hidden sizes for environment 'rmsnorm': *rmsnorm.json does not exist"])



def test_a_missing_expert_names_the_local_check(pytester, tmp_path):
    """Where the grader's experts are not installed (the public package), a grade against the
    expert is refused in one line that names the local check's option."""
    suite = tmp_path / "suite_no_expert.py"
    suite.write_text("from pathlib import Path\n"
                     "from env_suites.rmsnorm.environment import ENVIRONMENT\n"
                     "from pytest_nodus import EnvironmentSuite\n\n"
                     "class TestNoExpert(EnvironmentSuite):\n"
                     "    environment = ENVIRONMENT.derive('rmsnorm', expert=Path('/no/such/expert.py'))\n")
    result = pytester.runpytest_subprocess(str(suite), f"--rootdir={REPO}", "-p", "no:cacheprovider",
                                           f"--nodus-submission={SOLUTION}", "--nodus-device=cpu")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-nodus: the expert of 'rmsnorm' is not installed here*"
                                 "--nodus-against=starting_kernel"])
