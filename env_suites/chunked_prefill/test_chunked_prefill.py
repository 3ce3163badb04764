"""The chunked_prefill grading suite: public/hidden sizes, then fuzzed sizes. See TASK.md."""

from env_suites.chunked_prefill.environment import ENVIRONMENT
from pytest_nodus import EnvironmentSuite


class TestChunkedPrefill(EnvironmentSuite):
    environment = ENVIRONMENT
