"""The grader's own failures (memory, a busy GPU, a broken expert) are named, never the submission's verdict."""

from __future__ import annotations

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade


SOLUTION = REPO / "expert" / "rmsnorm" / "solution.py"


def test_the_graders_own_out_of_memory_is_named(grade, pytester):
    # The grader's allocation of fresh inputs fails at public-1 (as it did on a shared H200 in
    # run 32): that size is at the floor under its own code, the others are graded as usual.
    pytester.makepyfile(inputs_oom="""
        import torch
        from pytest_nodus.grader import inputs

        real = inputs.make_inputs

        def make_inputs(env, dims, seed, device):
            if dict(dims) == {"M": 33, "N": 1000}:
                raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1024.00 MiB.")
            return real(env, dims, seed, device)

        inputs.make_inputs = make_inputs
    """)
    pytester.syspathinsert()
    # --nodus-gpu-wait=1: shorter than the first pause, so no new attempt is made.
    result = grade(SOLUTION, "-p", "inputs_oom", "-k", "public", "--nodus-gpu-wait=1")
    document = result.document
    assert document["status"] == "error" and document["reward"] == -24
    assert [(f["size"], f["code"]) for f in document["flags"]] == [("public-1:M33xN1000", "grader_out_of_memory")]
    assert {s["id"]: s["status"] for s in document["sizes"]} == {"public-0:M64xN256": "correct",
                                                                "public-1:M33xN1000": "error"}


def test_a_size_that_waited_too_long_for_the_gpu_is_named(grade, pytester):
    # Another grade holds the GPU past --nodus-gpu-wait at public-1 (the CPU takes no lock,
    # so the lock's refusal is stood in for): that size is at the floor as gpu_busy.
    pytester.makepyfile(busy_gpu="""
        from pytest_nodus.grader import devices

        real = devices.exclusive

        def exclusive(device, wait_s=devices.GPU_WAIT_S):
            if wait_s == 7 and getattr(exclusive, "calls", 0) == 1:
                raise devices.DeviceBusy(f"waited {wait_s:g} s for the GPU, held by pid 4242")
            exclusive.calls = getattr(exclusive, "calls", 0) + 1
            return real(device, wait_s)

        devices.exclusive = exclusive
    """)
    pytester.syspathinsert()
    document = grade(SOLUTION, "-p", "busy_gpu", "--nodus-gpu-wait=7", "-k", "public").document
    assert document["status"] == "error" and document["reward"] == -24
    assert [(f["size"], f["code"], f["detail"]) for f in document["flags"]] == [
        ("public-1:M33xN1000", "gpu_busy", "waited 7 s for the GPU, held by pid 4242")]


def test_a_failing_expert_is_not_blamed_on_the_submission(grade):
    suite = REPO / "tests" / "envs" / "rmsnorm_broken_expert" / "suite_rmsnorm_broken_expert.py"
    result = grade(SOLUTION, "-k", "public-0", suite=suite)
    assert result.document["status"] == "error"
    assert result.codes == {"expert_failed"}, result.document["flags"]

