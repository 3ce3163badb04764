"""One verified, untimed call at a Hypothesis-drawn size, for one attempt or several.

A fuzzed size has no expert and no timing: the submission is called once on fresh inputs
and its outputs are checked against the fp32 reference. In a batch every attempt still in
the fuzz is called on the *same* inputs, and the reference is computed once for all of them
(on the H200 the reference of a large attention size costs more than the calls). Each
attempt keeps its own verdict, exactly as its own grade would have given it: the inputs are
a function of the grade seed, the test's label and the dims, never of the attempt.

Runs only in the grader.
"""

from __future__ import annotations

from pytest_nodus.grader import checks, exact_products, gpu_memory, inputs, phases
from pytest_nodus.grader.environment import Environment
from pytest_nodus.grader.results import SizeResult
from pytest_nodus.grader.sandbox_process import SandboxFailure


def check(grader, env: Environment, dims: dict, label: str, example: int, rerun: int,
          roles: list[str]) -> list[SizeResult]:
    """``roles``' results at ``dims``, in order. The inputs are a function of the grade seed,
    ``label`` and the dims, not of the example number: Hypothesis replays a failing size
    while it shrinks and once more at the end, and a replay with other values can pass by
    chance (a one-element row), which would leave the reported size half-shrunk."""

    def one() -> list[SizeResult]:
        results = {role: SizeResult(f"fuzz-{example}", "fuzz", rerun, dict(dims), device=grader.device.torch_name,
                                    env={"name": env.name, "version": env.version}) for role in roles}
        shared = SizeResult(f"fuzz-{example}", "fuzz", rerun, dict(dims))  # inputs and reference, made once
        try:
            with gpu_memory.attempting(list(results.values())):
                grader.reserve(env, dims, shared)
                _check(grader, env, dims, f"{label}/{sorted(dims.items())}", rerun, results, shared)
                gpu_memory.release(grader.device)
        finally:
            for result in results.values():
                result.take_shared(shared)
        return list(results.values())

    return gpu_memory.waiting_for_memory(one, grader.device, grader.gpu_wait_s)


def _check(grader, env: Environment, dims: dict, size_label: str, rerun: int, results: dict[str, SizeResult],
           shared: SizeResult) -> None:
    if grader.expert_beside_fuzz and (planned := grader.pool.planned_dims.get(env.name)):
        # The fuzz runs before the timed sizes (grader/session.py) and calls no expert: the
        # expert's sandbox starts and loads its file beside the fuzz's calls, none of which is
        # timed, instead of holding up the first timed size. Its arena is the timed sizes'.
        try:
            with phases.timed(shared.phases, "start"):
                grader.pool.launch(env, "expert", planned[0])
        except SandboxFailure:
            pass  # reported where the expert is first needed
    live = {}
    for role, result in results.items():
        if role in grader.hung:
            result.flag(grader.hung[role].code, f"not run: the submission already hung ({grader.hung[role].detail})")
            continue
        try:
            # Side by side: a first size (or a larger arena) starts every attempt's sandbox.
            with phases.timed(result.phases, "start"):
                grader.pool.launch(env, role, dims)
        except SandboxFailure:
            pass  # reported by get() below
        live[role] = result
    # Every sandbox is up before any is called: a launched sandbox's processes are known to
    # the process checks only once get() has seen it ready.
    sandboxes = {}
    for role, result in live.items():
        try:
            sandbox = grader.pool.get(env, role, dims, result.phases)
            sandbox.rest()  # until its call: the next attempt's file loads with this one frozen
            grader.charge_load(sandbox, role)  # a batch (grader/grading.py)
            sandboxes[role] = sandbox
        except SandboxFailure as failure:
            result.flag(failure.code, failure.detail)
            if failure.status == "timeout":
                grader.hung[role] = failure  # a file that hung at its import: not started again
    fresh, references = None, None
    for role, sandbox in sandboxes.items():
        result = live[role]
        result.isolation, result.removed_fatbins = sandbox.isolation, sandbox.removed_fatbins
        if fresh is None:
            # One call at this shape: the plain fp32 reference, without the tensor-core one's
            # compile and cross-check (grader/exact_products.py).
            with exact_products.once():
                with phases.timed(shared.phases, "inputs"):
                    fresh = inputs.make_inputs(env, dims, inputs.call_seed(grader.grade_seed, size_label, rerun),
                                               grader.torch_device)
                with phases.timed(shared.phases, "reference"):
                    references = inputs.reference(env, fresh, grader.torch_device, shared)
        try:
            grader.call(env, sandbox, dims, fresh, references, result, role, timed=False)
            result.calls = 1
            with phases.timed(result.phases, "finish"):
                reply = sandbox.finish(grader.timeout(env))
            checks.finished(env, grader.trusted, reply, result)
            sandbox.rest()
            grader.charge_leftovers(sandbox, role)  # a batch: its threads ran through the finish
        except SandboxFailure as failure:
            result.flag(failure.code, failure.detail)
            if failure.status == "timeout":
                grader.hung[role] = failure
