"""Suite for the test-only rmsnorm_slow_reference environment (collected only when named)."""

from pytest_nodus import EnvironmentSuite

from .environment import ENVIRONMENT


class TestRMSNormSlowReference(EnvironmentSuite):
    environment = ENVIRONMENT
