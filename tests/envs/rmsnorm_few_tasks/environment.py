"""Test-only environment: rmsnorm whose submissions may hold 48 tasks (processes and threads).

A sandbox past its task limit must be stopped by the kernel (grader/cgroup_limits.py): a
small limit makes that cheap to show.
"""

from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM

ENVIRONMENT = RMSNORM.derive("rmsnorm_few_tasks", max_tasks=48)
