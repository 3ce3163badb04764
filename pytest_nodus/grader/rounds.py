"""The rounds of one timed size: fresh inputs, then the expert and every submission on them.

One grade times one submission against the expert; a batch times several attempts against
the same expert run. Per round the inputs and the reference are made once and every role is
called on them, in an order that rotates per round (with one submission: submission then
expert, then expert then submission), so drift in the GPU's clocks hits every role alike.
Each attempt keeps its own verdict: one that fails, hangs or is flagged leaves the rounds
and the others go on with the same inputs, reference and expert calls. The expert's and the
baselines' work (their start, calls and verification) is recorded once and added to every
attempt's result at the end, as a separate grade of each would have recorded it.

While any role is called, every other sandbox is frozen (``Grader._call``): with N attempts,
N + 1 cgroups stand still per window; only an expert still loading in the first round (a
warm-up) is not. Runs only in the grader.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_nodus.grader import checks, devices, gpu_memory, inputs, phases, size_times, timing, warm_up
from pytest_nodus.grader.environment import Environment, Size
from pytest_nodus.grader.results import SizeResult
from pytest_nodus.grader.sandbox_process import Sandbox, SandboxFailure


@dataclass(frozen=True)
class TimingPlan:
    warmup: int
    timed: int


# A GPU call costs the grader ~13 ms (probe, spin, arm, verification) whatever the kernel's
# length, so rounds past what the median needs are most of a short kernel's grade. Ten are
# enough: recorded H100 grades of rmsnorm (the shortest kernels, 0.03-0.18 ms) counted on
# their first 10 of 20 timed rounds moved no rerun's reward by more than 0.002
# (`nodus-recount --rounds 10`, docs/timing.md). The CPU times more calls than a quartile
# needs (4): its clock shares two cores with the grader, and seven calls keep the IQR from
# resting on a single outlier.
PLANS = {"cuda": TimingPlan(warmup=3, timed=10), "cpu": TimingPlan(warmup=1, timed=7)}


def call_order(submissions: list[str], round_number: int) -> list[str]:
    """The roles of a round: the submissions then the expert, rotated by one per round, so
    each role is called first, and each attempt next to the expert, equally often."""
    order = [*submissions, "expert"]
    shift = round_number % len(order)
    return order[shift:] + order[:shift]


def grade(grader, env: Environment, size: Size, label: str, results: dict[str, SizeResult]) -> None:
    """Fill ``results`` (one per submission role) for ``size``; see the module docstring."""
    shared = SizeResult(size.id, size.kind, 0, dict(size.dims))  # the expert's and baselines' record
    try:
        _grade(grader, env, size, label, results, shared)
    finally:
        for result in results.values():
            result.take_shared(shared)


def _grade(grader, env: Environment, size: Size, label: str, results: dict[str, SizeResult],
           shared: SizeResult) -> None:
    live: dict[str, Sandbox] = {}
    for role, result in results.items():
        if role in grader.hung:
            hung = grader.hung[role]
            result.flag(hung.code, f"not run: the submission already hung ({hung.detail})")
    waiting = [role for role in results if role not in grader.hung]
    if not waiting:
        return
    grader.reserve(env, size.dims, shared)
    if not grader.fail_fast:
        # The expert's sandbox starts beside the submissions' instead of after them. A
        # failure to launch is reported where the expert is first needed (_start_expert).
        try:
            with phases.timed(shared.phases, "start"):
                grader.pool.launch(env, "expert", size.dims)
        except SandboxFailure:
            pass
    for role in waiting:
        # A batch's sandboxes start side by side (each start is mostly its interpreter's
        # imports and its device context: seconds on the H200); a failure to launch is
        # reported by get() below.
        try:
            # Timed as the role's start: its sandbox's start-up stages run from this spawn.
            with phases.timed(results[role].phases, "start"):
                grader.pool.launch(env, role, size.dims)
        except SandboxFailure:
            pass
    for role in waiting:
        result = results[role]
        try:
            live[role] = grader.pool.get(env, role, size.dims, result.phases)
        except SandboxFailure as failure:
            result.flag(failure.code, failure.detail)
            if failure.status == "timeout":
                grader.hung[role] = failure  # a file that hung at its import: not started again
            continue
        with phases.timed(result.phases, "start"):
            live[role].rest()  # from its start-up or its last size to its first call here
            try:
                grader.charge_load(live[role], role)  # a batch: before the next file loads
            except SandboxFailure as failure:
                _leave(grader, role, failure, live, results)
                continue
        result.isolation, result.removed_fatbins = live[role].isolation, live[role].removed_fatbins
    if not live:
        return
    planned = env.profile(grader.device.kind).timing
    plan = TimingPlan(*planned) if planned else grader.plan
    sandboxes: dict[str, Sandbox] = {}
    # The expert is waited for at its own first call, the last of the first round, so that its
    # load (seconds where its file imports a compiler, as rmsnorm's torch.compile does) runs
    # beside the submissions' first calls. Only where that round is a warm-up: a
    # sandbox still loading is not frozen, and no timed call may run beside one. Under
    # --nodus-fail-fast it was not launched, and starts there once a submission's first call
    # has passed: a submission that fails it never costs the expert's start.
    if plan.warmup == 0 and not grader.fail_fast \
            and not _start_expert(grader, env, size, sandboxes, live, results, shared):
        return
    baselines = _baseline_sandboxes(grader, env, size, shared) if size.kind in ("public", "hidden") else {}
    times: dict[str, list[timing.CallTimes]] = {"expert": [], **{role: [] for role in live}, **{b: [] for b in baselines}}
    with devices.exclusive(grader.device, grader.gpu_wait_s) as waited_ms:
        phases.add(shared.phases, "gpu_wait", waited_ms)
        if grader.warm_together and len(live) > 1 and plan.warmup and not grader.fail_fast:
            # The attempts' set-ups at once (grader/warm_up.py); the expert's stays its own
            # first call, on an idle GPU, as without the option.
            failed = warm_up.warm(grader, env, size.dims, label, live, results, shared)
            for role, failure in failed.items():
                _leave(grader, role, failure, live, results)
        round_number, rounds_left, contended = 0, plan.warmup + plan.timed, 0
        while rounds_left and live:
            seed = inputs.call_seed(grader.grade_seed, label, round_number)
            with phases.timed(shared.phases, "inputs"):
                fresh = inputs.make_inputs(env, size.dims, seed, grader.torch_device)
            references, timed, round_times, void = None, round_number >= plan.warmup, {}, False
            for role in call_order(list(live), round_number):
                if role not in live and (role != "expert" or not live):
                    continue  # left the rounds earlier in this one; the expert only for an attempt still in
                if role == "expert" and "expert" not in sandboxes \
                        and not _start_expert(grader, env, size, sandboxes, live, results, shared):
                    return
                sandbox = sandboxes["expert"] if role == "expert" else live[role]
                record = shared if role == "expert" else results[role]
                try:
                    call, references = grader.call(env, sandbox, size.dims, fresh, references, record, role, timed)
                except SandboxFailure as failure:
                    if role == "expert":
                        # The grader's own side broke, or the GPU stayed held before its set-up
                        # (grading.py): every attempt still in the rounds loses the size.
                        code = failure.code if failure.code in ("expert_failed", "gpu_contended") else "expert_failed"
                        detail = failure.detail if failure.code == code else f"the expert: {failure}"
                        for other in live:
                            results[other].flag(code, detail)
                        return
                    _leave(grader, role, failure, live, results)
                    continue
                if role != "expert":
                    results[role].calls += 1
                    if grader.fail_fast and results[role].flags:
                        # A failed size: its other rounds change nothing. Its finish still
                        # runs, so the late-write check and the audit name the cheat.
                        _finish(grader, env, role, live, results)
                        continue
                round_times[role] = call
                void |= timed and call.contended_ns > 0
            for role in list(baselines):
                try:
                    call, references = grader.call(env, baselines[role], size.dims, fresh, references, shared, role,
                                                    timed=False)
                except SandboxFailure as failure:  # context only: drop it, keep grading
                    _baseline_failed(grader, shared, role.removeprefix("baseline:"), str(failure))
                    del baselines[role], times[role]
                    continue
                round_times[role] = call
            round_number += 1
            if void:
                # Another context held the GPU as a window opened (grader/gpu_idle.py): the
                # round was verified, and is timed again on fresh inputs.
                contended += 1
                shared.contended_rounds = contended
                if contended > plan.timed:
                    step = max(c.contended_ns for c in round_times.values()) / 1e6
                    for role in live:
                        results[role].flag("gpu_contended", f"{contended} rounds opened on a GPU another context held "
                                                            f"(the last with a step of {step:.2f} ms in the idle probe)")
                    return
                continue
            rounds_left -= 1
            if timed:
                for role, call in round_times.items():
                    if role in times:
                        times[role].append(call)
        if not live:
            return
        for role in list(live):
            grader.idle_check(live[role], results[role])
        try:
            with phases.timed(shared.phases, "finish"):
                # Trusted: its audit is never read, and stopping the profiler to take one costs
                # the finish phase a Kineto collection per size for nothing.
                sandboxes["expert"].finish(grader.timeout(env), audit=False)
        except SandboxFailure as failure:
            for role in live:
                results[role].flag("expert_failed", f"the expert: {failure}")
            return
        for role in list(live):
            _finish(grader, env, role, live, results)
    for role in live:
        own = {"expert": times["expert"], "submission": times[role], **{b: times[b] for b in baselines}}
        size_times.record(results[role], env, size, own, grader.device, grader.trusted)
    gpu_memory.release(grader.device)


def _leave(grader, role: str, failure: SandboxFailure, live: dict, results: dict) -> None:
    """An attempt's failure is its own verdict at this size; the rounds go on without it."""
    results[role].flag(failure.code, failure.detail)
    if failure.status == "timeout":
        grader.hung[role] = failure
    del live[role]


def _finish(grader, env: Environment, role: str, live: dict, results: dict) -> None:
    """The attempt's end of the size: the late-write check and the audit's findings."""
    result = results[role]
    try:
        with phases.timed(result.phases, "finish"):
            reply = live[role].finish(grader.timeout(env))
        checks.finished(env, grader.trusted, reply, result)
        live[role].rest()
        grader.charge_leftovers(live[role], role)  # a batch: its threads ran through the finish
    except SandboxFailure as failure:
        _leave(grader, role, failure, live, results)
        return
    if grader.fail_fast and result.flags:
        del live[role]


def _start_expert(grader, env: Environment, size: Size, sandboxes: dict, live: dict, results: dict,
                  shared: SizeResult) -> bool:
    try:
        sandboxes["expert"] = grader.pool.get(env, "expert", size.dims, shared.phases)
    except SandboxFailure as failure:
        for role in live:
            results[role].flag("expert_failed", f"the expert did not start: {failure}")
        return False
    return True


def _baseline_sandboxes(grader, env: Environment, size: Size, shared: SizeResult) -> dict[str, Sandbox]:
    if not grader.baselines:
        return {}
    started = {}
    for name in env.profile(grader.device.kind).baselines:
        if name in grader.failed_baselines:
            _baseline_failed(grader, shared, name, "failed at an earlier size of this grade")
            continue
        try:
            started[f"baseline:{name}"] = grader.pool.get(env, f"baseline:{name}", size.dims, shared.phases)
        except SandboxFailure as failure:
            _baseline_failed(grader, shared, name, f"did not start: {failure}")
    return started


def _baseline_failed(grader, shared: SizeResult, name: str, why: str) -> None:
    # A baseline that hangs would otherwise cost a full call time limit at every size.
    grader.failed_baselines.add(name)
    shared.baseline_notes = {**(shared.baseline_notes or {}), name: shared.public_text(why)[:200]}
