"""Test-only environment: rmsnorm with torch's own RMSNorm ops forbidden.

Exercises the run-time kernel audit on the CPU (no shipped CPU environment forbids ops).
"""

import dataclasses

from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM

ENVIRONMENT = dataclasses.replace(RMSNORM, name="rmsnorm_audit", forbidden=(r"^aten::(_fused_)?rms_norm$",))
