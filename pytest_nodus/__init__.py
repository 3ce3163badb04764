"""pytest-nodus: sealed graders for RL environments in which agents write GPU kernels.

The public API is what an environment declaration needs; everything else is the plugin's
business. Module map (one concept each):

- ``environment``   what an environment is (contract, sizes, reference, tolerance, ...)
- ``inputs``        fresh inputs per call, grader-owned slots, seeds
- ``isolation``     the grader's handle on a sandbox process; ``sandbox`` is that process
- ``landlock``      kernel-enforced confinement of the sandbox; ``guard`` its tripwires
- ``fatbin``        GPU kernels compiled into torch, taken out of a submission's process
- ``templates``     inductor kernel templates (FlexAttention's) kept out of it
- ``heap``          GPU: a call's allocations in the grader's arena (outputs read in place)
- ``transport``     shared tensors and the message protocol between the two
- ``correctness``   tolerances and every-element verification
- ``clock``         the grader's own clock around each call (the time a submission cannot forge)
- ``timing``        claims held to that clock, work left running, physical-floor checks
- ``grading``       the per-size procedure; ``reward`` the verdict and the reward
- ``fuzz``          Hypothesis sizes; ``report`` terminal table and JSON; ``plugin`` hooks
- ``devices``       device choice, peaks, one GPU per xdist worker
- ``triton_interpreter``  fixes that make the CPU path compute what the GPU computes
- ``workspace``     the directory an agent is given
"""

from pytest_nodus.correctness import ElementwiseRelative, Normwise
from pytest_nodus.environment import (
    Choice,
    Contract,
    Environment,
    IntRange,
    ScalarSpec,
    Size,
    SizeDomain,
    TensorSpec,
)
from pytest_nodus.reward import FLOOR

__version__ = "0.1.0"

__all__ = [
    "Choice",
    "Contract",
    "ElementwiseRelative",
    "Environment",
    "FLOOR",
    "IntRange",
    "Normwise",
    "ScalarSpec",
    "Size",
    "SizeDomain",
    "TensorSpec",
    "__version__",
]
