"""A size whose grader met an out-of-memory once is graded again from fresh inputs once memory
is back (other grades on the GPU ended), whole and correct, the wait shown as ``gpu_wait``."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_a_size_is_graded_again_after_the_graders_out_of_memory(grade, pytester):
    # The first allocation of public-1's fresh inputs fails, as it would while another grade
    # on the GPU holds the memory; the next attempt, 5 s later, finds it.
    pytester.makepyfile(inputs_oom_once="""
        import torch
        from pytest_nodus.grader import inputs

        real = inputs.make_inputs
        failed = []

        def make_inputs(env, dims, seed, device):
            if dict(dims) == {"M": 33, "N": 1000} and not failed:
                failed.append(seed)
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1024.00 MiB.")
            return real(env, dims, seed, device)

        inputs.make_inputs = make_inputs
    """)
    pytester.syspathinsert()
    document = grade(SOLUTION, "-p", "inputs_oom_once", "-k", "public").document
    assert document["status"] == "correct" and document["flags"] == []
    waited = {s["id"]: s["phases"].get("gpu_wait", 0.0) for s in document["sizes"]}
    assert waited == {"public-0:M64xN256": 0.0, "public-1:M33xN1000": 5000.0}
