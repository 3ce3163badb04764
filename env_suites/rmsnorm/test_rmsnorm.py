"""The rmsnorm grading suite: every public/hidden size is one test, plus fuzzed sizes.

Run: pytest env_suites/rmsnorm --nodus-submission=PATH [--nodus-sealed=DIR]
"""

from env_suites.rmsnorm.environment import ENVIRONMENT
from pytest_nodus import EnvironmentSuite


class TestRMSNorm(EnvironmentSuite):
    environment = ENVIRONMENT
