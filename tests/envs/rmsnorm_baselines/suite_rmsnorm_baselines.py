"""Suite for the test-only rmsnorm_baselines environment (collected only when named)."""

from pytest_nodus import EnvironmentSuite

from .environment import ENVIRONMENT


class TestRMSNormBaselines(EnvironmentSuite):
    environment = ENVIRONMENT
