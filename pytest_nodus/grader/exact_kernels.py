"""The Triton side of ``exact_products``: an fp32 operand's product on tensor cores, exactly.

For the environments' fused references (``env_suites/*/fused_reference.py``), which run in the
grader's process on a GPU (in Triton's interpreter in the tests). ``exact_products`` says why
three bf16 pieces and fp32 sums keep a product fp32.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def pieces_dot(x, b):
    """``x @ b`` for an fp32 tile ``x`` and a bf16 tile ``b``: ``x`` as three bf16 pieces that
    sum to it exactly (above 2^-110), one product each, added smallest first."""
    high = x.to(tl.bfloat16)
    rest = x - high.to(tl.float32)
    middle = rest.to(tl.bfloat16)
    low = (rest - middle.to(tl.float32)).to(tl.bfloat16)
    part = tl.dot(low, b)
    part += tl.dot(middle, b)
    part += tl.dot(high, b)
    return part
