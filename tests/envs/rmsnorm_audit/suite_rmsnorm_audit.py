"""Suite for the test-only rmsnorm_audit environment (named suite_*, so only explicit runs collect it)."""

from pytest_nodus import EnvironmentSuite
from .environment import ENVIRONMENT


class TestRMSNormAudit(EnvironmentSuite):
    environment = ENVIRONMENT
