"""Suite for the test-only axpy environment (collected only when named)."""

from pytest_nodus import EnvironmentSuite

from .environment import ENVIRONMENT


class TestAxpy(EnvironmentSuite):
    environment = ENVIRONMENT
