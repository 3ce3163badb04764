"""Test-only environment: axpy whose expert takes seconds to load, as an expert that imports
torch.compile does (rmsnorm's)."""

from pathlib import Path

from tests.envs.axpy.environment import ENVIRONMENT as AXPY

ENVIRONMENT = AXPY.derive("axpy_slow_expert", expert=Path(__file__).parent / "expert.py")
