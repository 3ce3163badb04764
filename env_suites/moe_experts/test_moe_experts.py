"""The moe_experts grading suite: public/hidden sizes, then fuzzed sizes. See TASK.md."""

from env_suites.moe_experts.environment import ENVIRONMENT
from pytest_nodus import EnvironmentSuite


class TestMoeExperts(EnvironmentSuite):
    environment = ENVIRONMENT
