"""Suite for the test-only rmsnorm_few_tasks environment (collected only when named)."""

from pytest_nodus import EnvironmentSuite

from .environment import ENVIRONMENT


class TestRMSNormFewTasks(EnvironmentSuite):
    environment = ENVIRONMENT
