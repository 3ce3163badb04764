"""Suite for the test-only axpy_slow_expert environment (collected only when named)."""

from pytest_nodus import EnvironmentSuite

from .environment import ENVIRONMENT


class TestAxpySlowExpert(EnvironmentSuite):
    environment = ENVIRONMENT
