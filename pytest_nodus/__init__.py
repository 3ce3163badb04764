"""pytest-nodus: sealed graders for RL environments in which agents write GPU kernels.

The package is three rooms, and which code runs in the submission's process is the room
it lives in:

- ``grader/``   the pytest process only: the plugin, environment declarations, inputs,
                verification, the grader's clock, timing rules, reward and report;
- ``sandbox/``  the only code the submission's process imports (``python -m pytest_nodus.sandbox``);
- ``shared/``   what both must agree on (arena layout, messages, flag words); imports neither;
- ``trusted/``  what the trusted files (experts, baselines) import in their own sandboxes.

This module is imported by both processes (it is the package's ``__init__``), so it imports
nothing: the names below are loaded from ``grader/`` on first use (PEP 562), and the
sandbox, which never uses them, never loads the grader.
"""

from __future__ import annotations

import importlib

__version__ = "0.2.0"

_EXPORTS = {
    "Choice": "environment", "Contract": "environment", "Cost": "environment", "Environment": "environment",
    "IntRange": "environment", "Profile": "environment", "ScalarSpec": "environment", "Size": "environment",
    "SizeDomain": "environment", "TensorSpec": "environment",
    "ElementwiseRelative": "correctness", "Normwise": "correctness",
    "Forbidden": "keepout", "ops": "keepout", "CUDNN": "keepout", "TORCH_SDPA": "keepout",
    "FLEX_ATTENTION": "keepout", "ATTENTION_PACKAGES": "keepout", "ATTENTION_LIBRARIES": "keepout",
    "FLOOR": "reward",
    "EnvironmentSuite": "suite",
    "grade": "api", "Grade": "api", "GradeFailed": "api", "WarmGrader": "warm_grader",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str):
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_nodus' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"pytest_nodus.grader.{module}"), name)
    globals()[name] = value
    return value
