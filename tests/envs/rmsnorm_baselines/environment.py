"""Test-only environment: rmsnorm with three context baselines (--nodus-baselines).

``eager`` is a plain baseline, ``prepared`` does its work in ``prepare`` (untimed) and
returns it from ``kernel``, and ``broken`` raises: a failing baseline is a note in the
report, never the submission's verdict. It also times its own number of rounds
(``timing``: 1 warm-up + 2 timed on the CPU, where the grader's default is 1 + 3).
"""

from pathlib import Path

from env_suites.rmsnorm.environment import ENVIRONMENT as RMSNORM

_HERE = Path(__file__).parent
_BASELINES = {name: _HERE / f"baseline_{name}.py" for name in ("eager", "prepared", "broken")}
ENVIRONMENT = RMSNORM.derive("rmsnorm_baselines", baselines=_BASELINES, profiles={"cpu": {"timing": (1, 2)}})
