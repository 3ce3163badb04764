"""Test-only environment: rmsnorm whose expert crashes on its third call.

A failure on the grader's side must be reported as such (expert_failed), never as the
submission's crash or hang.
"""

from pathlib import Path

from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM

_CRASHING = Path(__file__).with_name("crashing_expert.py")
ENVIRONMENT = RMSNORM.derive("rmsnorm_broken_expert", expert=_CRASHING)
