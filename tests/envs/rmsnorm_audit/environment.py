"""Test-only environment: rmsnorm with torch's own RMSNorm ops forbidden.

Exercises the run-time kernel audit on the CPU (no shipped CPU environment forbids ops).
"""


from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM
from pytest_nodus import ops

ENVIRONMENT = RMSNORM.derive("rmsnorm_audit", forbid=(ops(r"^aten::(_fused_)?rms_norm$", name="torch's RMSNorm"),))
