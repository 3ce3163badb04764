"""Test-only environment: axpy whose expert takes seconds to load, as the rmsnorm expert's
torch.compile imports do on the H200 (7.3 s of a 31.7 s grade: docs/throughput.md)."""

from pathlib import Path

from tests.envs.axpy.environment import ENVIRONMENT as AXPY

ENVIRONMENT = AXPY.derive("axpy_slow_expert", expert=Path(__file__).parent / "expert.py")
