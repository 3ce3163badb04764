"""A child process in one timed call is a compiler; in two, a flag."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.grade


@pytest.mark.parametrize("timed_calls_with_a_child", [1, 2])
def test_a_child_process_in_one_timed_call_is_a_compiler_in_two_a_flag(grade, pytester, timed_calls_with_a_child):
    # Runs 33-34: torch.compile ran a child (50-80 ms) in one timed call at one to three sizes of a
    # correct kernel's first rerun. This kernel starts one in the first timed call at each
    # size (CPU plan: one warm-up call, three timed), or in the first two.
    kernel = pytester.makepyfile(child_kernel=f"""
        import subprocess
        import sys

        import torch

        _calls = {{}}
        _BURN = "import time\\nt = time.process_time()\\nwhile time.process_time() - t < 0.03: pass"

        def kernel(x, weight, eps):
            n = _calls[tuple(x.shape)] = _calls.get(tuple(x.shape), 0) + 1
            if 2 <= n < 2 + {timed_calls_with_a_child}:
                subprocess.run([sys.executable, "-c", _BURN], check=True)
            xf = x.float()
            return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    """)
    document = grade(kernel, "-k", "public").document
    timed = [s for s in document["sizes"] if s["kind"] == "public"]
    assert [s["calls_with_children"] for s in timed] == [timed_calls_with_a_child] * len(timed), document["flags"]
    if timed_calls_with_a_child == 1:
        assert document["status"] == "correct", document["flags"]
    else:
        # (Two of the three CPU timings are the child's: the clock also overrules the claim.)
        assert "background_process" in {f["code"] for f in document["flags"]}, document["flags"]
        assert document["reward"] == -24

