"""Test-only environment: rmsnorm whose reference takes half a second, as a long size's fp32
reference does on the GPU (chunked_prefill at L = 131072 spends seconds there). The grader
computes it between a call's return and the next call."""

import time

from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM

REFERENCE_S = 0.5


def _slow_reference(inputs):
    time.sleep(REFERENCE_S)
    return RMSNORM.reference(inputs)


ENVIRONMENT = RMSNORM.derive("rmsnorm_slow_reference", reference=_slow_reference)
