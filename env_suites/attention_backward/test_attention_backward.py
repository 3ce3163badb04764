"""The attention_backward grading suite: public/hidden sizes, then fuzzed sizes. See TASK.md."""

from env_suites.attention_backward.environment import ENVIRONMENT
from pytest_nodus import EnvironmentSuite


class TestAttentionBackward(EnvironmentSuite):
    environment = ENVIRONMENT
