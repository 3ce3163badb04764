"""Suite for the test-only rmsnorm_broken_expert environment (collected only when named)."""

from pytest_nodus import EnvironmentSuite

from .environment import ENVIRONMENT


class TestRMSNormBrokenExpert(EnvironmentSuite):
    environment = ENVIRONMENT
