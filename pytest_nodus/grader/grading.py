"""Grade one size: the procedure that ties inputs, sandboxes, checks and timing together.

A timed size runs ``warmup + timed`` rounds (``grader/rounds.py``). Each round makes fresh
inputs, then calls the expert and every submission on them (the order rotating per round),
each in its own sandbox, each call verified against the reference computed here from the
grader's pristine copy. Warm-up calls are verified like the rest; only their times are
dropped. A fuzzed size is one verified call of each submission, untimed, with no expert
(``grader/fuzzed_call.py``).

A grade usually has one submission (role ``submission``); a batch grades several attempts
against one expert run (roles ``submission:<i>``), each attempt with its own sandbox and its
own verdict per size.

Everything a submission could influence is decided here, in the grader process: the
values in the receipts, whether the inputs came back untouched, which kernels ran, and
whether its claimed times agree with the grader's clock. What each check means for each
role is ``grader/checks.py``.
"""

from __future__ import annotations

from pathlib import Path

import torch

from pytest_nodus.grader import (checks, devices, fuzzed_call, gpu_idle, gpu_ledger, gpu_memory, idle_work, inputs, phases,
                                 rounds, timing)
from pytest_nodus.grader.cgroup import frozen
from pytest_nodus.grader.environment import Environment, Size
from pytest_nodus.grader.results import SizeResult
from pytest_nodus.grader.roles import is_submission, submission_roles
from pytest_nodus.grader.sandbox_pool import SandboxPool
from pytest_nodus.grader.sandbox_process import Sandbox, SandboxFailure


# The expert's and the baselines' first call at a new size may compile: FlexAttention's cold
# torch.compile takes minutes on the H200, past attention's call limit. They are the
# grader's own trusted code, so that first call gets this much; the submission never does.
TRUSTED_FIRST_CALL_TIMEOUT_S = 900.0
# In a batch, how often an attempt's own GPU work may be found still running after it ran (its
# load, a call, a finish) before it is taken out as pending_work (Grader.charge_leftovers).
# Honest work never is: the harness synchronises the device before it replies. Three, not one:
# another grade's burst on a shared card can start just as a call ends, but not after three of
# one attempt's calls and none of its batch-mates'.
LEFTOVER_CALLS = 3


class Grader:
    """Per-process (per xdist worker) owner of the sandboxes and the grade seed.
    ``submissions``: one kernel file, or several for a batch (``roles``: one per file)."""

    def __init__(self, submissions: Path | list[Path], device: devices.Device, grade_seed: int, audit: bool = True,
                 expert_cache: Path | None = None, baselines: bool = False, trusted: bool = False,
                 fail_fast: bool = False, warm_together: bool = False):
        submissions = [Path(submissions)] if isinstance(submissions, (str, Path)) else [Path(p) for p in submissions]
        self.roles = submission_roles(len(submissions))
        # The roles whose sandboxes this turn grades: all of them, unless a batch larger than
        # its GPU holds is graded in turns (grader/turns.py, take_turn).
        self.active = list(self.roles)
        self.device = device
        # --nodus-fail-fast: a size stops at the submission's first failed call; the grade
        # is at the floor from then on, so its other rounds (and the expert) cost time only.
        self.fail_fast = fail_fast
        # --nodus-warm-together: each size's first calls side by side before its rounds
        # (grader/warm_up.py).
        self.warm_together = warm_together
        # The expert's sandbox starts beside the fuzz, which runs first (grader/fuzzed_call.py):
        # where timed sizes follow and it is not held back for --nodus-fail-fast (the session
        # turns it off when none is selected).
        self.expert_beside_fuzz = not fail_fast
        self.torch_device = torch.device(device.torch_name)
        self.grade_seed = grade_seed
        self.baselines = baselines
        # A trusted submission (the expert graded against itself, to calibrate the timer) may
        # run the kernels the environment forbids; every other check still applies.
        self.trusted = trusted
        self.pool = SandboxPool(submissions, device, audit, expert_cache, trusted)
        self.pool.call_limit = self.timeout
        self.failed_baselines: set[str] = set()  # a baseline that failed once is not retried this grade
        self.plan = rounds.PLANS[device.kind]
        self.call_timeout_override: float | None = None
        self.gpu_wait_s = devices.GPU_WAIT_S  # --nodus-gpu-wait
        self.ledger: gpu_ledger.Ledger | None = None  # the GPU memory this grade reserves, at its first size
        self._reserved = 0
        # A submission that hung once is not given the device again in this grade: every
        # further size would cost another full time limit for the same verdict. By role.
        self.hung: dict[str, SandboxFailure] = {}
        # The smallest failing size a local grade has shrunk each role's failure to: one
        # shrink per attempt and grade. Each trial is a verified call (and a sandbox restart
        # after a crash), and once found the answer holds at every later failing size: a
        # size where that kernel fails. By role.
        self.smallest_failing: dict[str, dict] = {}
        self._warmed: set[tuple] = set()  # (sandbox pid, dims) a trusted sandbox has already run
        self.leftovers: dict[str, int] = {}  # role -> times its GPU work still ran after it did (a batch)
        self._loads_charged: set[int] = set()  # sandbox pids whose file's load was charged

    def close(self) -> None:
        self.pool.close()
        if self.ledger is not None and self._reserved:
            self.ledger.release()
            self._reserved = 0

    def take_turn(self, attempts: list[int]) -> None:
        """Grade the attempts ``attempts`` (indices into ``roles``) from now on: the sandboxes
        of the turn before are killed first, so that their GPU memory is free for this turn's
        (the expert's sandbox, its set-up and compile caches stay)."""
        turn = [self.roles[i] for i in attempts]
        leaving = [role for role in self.active if role not in turn]
        if leaving:
            self.pool.retire(leaving)
        self.active = turn

    def reserve(self, env: Environment, dims, result: SizeResult) -> None:
        """Room on the GPU for this grade at its largest planned size (or ``dims``), reserved
        before the size starts anything; the wait is the size's ``gpu_wait``."""
        if self.device.kind != "cuda" or self.device.kind not in env.profiles:
            return  # a CPU grade shares no GPU; a missing profile is reported where the sandbox starts
        if self.ledger is None:
            self.ledger = gpu_ledger.for_device(self.device)
        planned = [*self.pool.planned_dims.get(env.name, ()), dims]
        budget, expert = gpu_ledger.budgets(env.profile(self.device.kind))
        need = gpu_ledger.need_bytes(max(env.contract.call_bytes(d) for d in planned), budget, len(self.active), expert)
        if need > self._reserved:
            phases.add(result.phases, "gpu_wait", self.ledger.reserve(need, self.gpu_wait_s))
            self._reserved = need
        result.gpu_reserved_gib = round(self._reserved / gpu_ledger.GIB, 2)

    def timeout(self, env: Environment) -> float:
        if self.call_timeout_override is not None:
            return self.call_timeout_override
        return env.profile(self.device.kind).call_timeout_s

    def first_call_timeout(self, env: Environment, role: str) -> float:
        """A role's limit for its first call at a size: the call's, or for the grader's own
        trusted files (the expert, the baselines), whose first call may compile for minutes,
        TRUSTED_FIRST_CALL_TIMEOUT_S."""
        return self.timeout(env) if is_submission(role) else max(self.timeout(env), TRUSTED_FIRST_CALL_TIMEOUT_S)

    # -- one verified call --------------------------------------------------------------
    def call(self, env, sandbox: Sandbox, dims, fresh: dict, references, result: SizeResult, role: str,
              timed: bool):
        """One verified call. Returns (CallTimes, references) or raises SandboxFailure."""
        with phases.remainder(result.phases, "verification", ("calls", "reference", "rest")):
            try:
                return self._verified_call(env, sandbox, dims, fresh, references, result, role, timed)
            finally:
                if len(self.roles) > 1:  # a batch: the call queued its leftover probe
                    with phases.timed(result.phases, "rest"):
                        self._charge_probed(sandbox, role)

    def _charge_probed(self, sandbox: Sandbox, role: str) -> None:
        """The leftover probe queued after a batch attempt's call: it ran beside the call's
        verification and costs nothing where it read the GPU idle; where it did not, the work
        is waited out and charged (:meth:`charge_leftovers`, whose own probe, run alone,
        decides). Work that ended during the checks met no batch-mate."""
        if sandbox.clock.queued_idle_step_ns():
            self.charge_leftovers(sandbox, role)

    def _verified_call(self, env, sandbox: Sandbox, dims, fresh: dict, references, result: SizeResult, role: str,
                       timed: bool):
        timeout = self.timeout(env)
        baseline = role.startswith("baseline:")
        submission = is_submission(role)
        first_call = (sandbox.process.pid, tuple(sorted(dims.items())))  # a restarted sandbox compiles again
        go_part = "go" if submission else "expert"
        setup = False  # a trusted role's first call at a size: it waits for an idle GPU
        if first_call not in self._warmed:
            # A sandbox's first call at a size builds what its shapes need (compiles, autotuning,
            # cuDNN graphs): the submission's own cost, or the expert's setup.
            go_part = "first" if submission else "setup"
            setup = not submission
            timeout = self.first_call_timeout(env, role)
        outputs = [(spec.concrete_shape(dims), spec.dtype) for spec in env.contract.outputs]
        with phases.timed(result.phases, "verification_place"):
            slot = self.pool.placer(role, env).place(fresh, outputs)
        scalars = {k: v for k, v in fresh.items() if not isinstance(v, torch.Tensor)}
        order = [spec.name for spec in env.contract.inputs]
        if baseline:
            slot.write_now(fresh)  # a baseline's untimed prepare reads them while armed
        if submission:
            self.idle_check(sandbox, result)
        # The other sandboxes stand still meanwhile: none can slow this call, on the CPU or the GPU.
        with phases.timed(result.phases, "calls"):
            laps = phases.Laps(result.phases, "calls_")
            with frozen(s.cgroup for s in self.pool.all() if s is not sandbox):
                laps.lap("freeze")
                if setup:
                    self._gpu_idle_for_setup(sandbox, role)
                    laps.lap("idle")
                reading = sandbox.call(slot.layout, scalars, order, [] if baseline else slot.copies(fresh),
                                       slot.receipts, timeout, result.phases, go_part, timed)
                laps.skip()  # the call's own parts are recorded; the thaw is the freeze's other half
            laps.lap("freeze")
        if submission:
            # At rest before anything is checked: the grader's own checks, reference and
            # verification can take seconds (a long prefill's fp32 reference), and the CUDA
            # driver's helper thread wakes now and then all that while; counted, its wakes
            # read as background work. What the idle count covers is the settle, the same
            # few milliseconds at every size.
            with phases.timed(result.phases, "rest"):
                self._rest(sandbox, result, timed)
                if len(self.roles) > 1:
                    # A batch: its leftovers are probed beside the checks below, and charged
                    # (charge_leftovers) once they are done, in call().
                    sandbox.clock.queue_idle_step()
        if submission and reading.ok:
            with phases.timed(result.phases, "verification_outputs"):
                for finding in checks.outputs(reading, slot, timed) + checks.held(reading, self.device.kind == "cuda"):
                    result.flag(finding.code, finding.detail)
            if timed and reading.child_ms:
                checks.children_ran(result, reading, reading.child_ms)
        if timed and reading.ok and not baseline and reading.copied_outputs(slot.receipts):
            result.outputs_copied += 1  # the expert's on the shared record (rounds.py)
        with phases.timed(result.phases, "verification_processes"):
            for finding in checks.processes(reading, self.pool.started(), timed, submission):
                result.flag(finding.code, finding.detail)
        for finding in checks.reported(reading):
            if submission:
                result.flag(finding.code, finding.detail)
        if (raised := checks.raised(reading, sandbox.kernel_path)) is not None:
            raise SandboxFailure("error", "raised", f"the kernel raised {raised}")
        if references is None:
            with phases.timed(result.phases, "reference"):
                references = inputs.reference(env, fresh, self.torch_device, result)
        with phases.timed(result.phases, "verification_inputs"):
            mutated = checks.mutated_inputs(slot, fresh)
        for name in mutated:
            if baseline:
                raise SandboxFailure("error", "baseline_failed", f"changed input '{name}'")
            if not submission:
                raise SandboxFailure("error", "expert_failed", f"the expert changed input '{name}'")
            result.flag("input_mutated", f"input '{name}' was changed by the call")
        with phases.timed(result.phases, "verification_values"):
            values = checks.values(reading, references, env, fresh)
        for check in values:
            if submission:
                worst = result.note_error(check.error, check.limit)
                if not check.passed:
                    result.flag(*checks.value_flag(check), replace=worst)
            elif baseline:
                name = role.removeprefix("baseline:")
                result.baseline_errors = result.baseline_errors or {}
                result.baseline_errors[name] = max(result.baseline_errors.get(name, 0.0), check.error / check.limit)
            else:
                result.expert_error = max(result.expert_error or 0.0, check.error)
                if not check.passed:
                    raise SandboxFailure("error", "expert_failed",
                                         f"the expert's '{check.name}' misses tolerance ({check.error:.3g})")
        t_stream, t_call = checks.times(reading)
        self._warmed.add(first_call)
        return timing.CallTimes(t_stream, t_call, reading.window_ms, reading.contended_ns, reading.window_parts), references

    @staticmethod
    def _gpu_idle_for_setup(sandbox: Sandbox, role: str) -> None:
        """A trusted role's set-up starts only on a GPU the grader has to itself, every other
        sandbox frozen (grader/gpu_idle.py ``settle``); past the wait, the attempts still in
        lose the size as ``gpu_contended``, the verdict of rounds that keep opening on a held
        GPU."""
        step = gpu_idle.settle(sandbox.clock.idle_step_ns)
        if step:
            raise SandboxFailure("error", "gpu_contended",
                                 f"another context held the GPU for {gpu_idle.SETTLE_S:.0f} s before the {role}'s "
                                 f"set-up (a step of {step / 1e6:.2f} ms in the idle probe)")

    def charge_load(self, sandbox: Sandbox, role: str) -> None:
        """:meth:`charge_leftovers` once per sandbox process, after its file's load (files
        load one at a time: ``protocol.LOAD``)."""
        if sandbox.pid not in self._loads_charged:
            self._loads_charged.add(sandbox.pid)
            self.charge_leftovers(sandbox, role)

    def charge_leftovers(self, sandbox: Sandbox, role: str) -> None:
        """In a batch, after each time an attempt ran (its load, a call, a size's finish), its
        sandbox frozen: GPU work of its own that still runs (queued by a thread past the
        harness's synchronise; freezing stops threads, not kernels) would land in its
        batch-mates' windows and set-ups, voiding their rounds up to ``gpu_contended``. So
        the grader waits it out here, where it is known whose it is, and takes an attempt that
        does it again, or past the wait, out: raises SandboxFailure. Alone, an attempt's
        leftovers meet only the expert: its windows are voided and its set-up waits
        (``gpu_idle.settle``)."""
        if len(self.roles) < 2 or not sandbox.clock.idle_step_ns():
            return
        self.leftovers[role] = self.leftovers.get(role, 0) + 1
        held = gpu_idle.settle(sandbox.clock.idle_step_ns)
        if held or self.leftovers[role] >= LEFTOVER_CALLS:
            raise SandboxFailure("flagged", "pending_work",
                                 f"its GPU work still ran {self.leftovers[role]} times after it had replied (its load, "
                                 f"a call or a finish) and the device was synchronised (the grader's idle probe, the "
                                 f"sandbox frozen)")

    def _rest(self, sandbox: Sandbox, result: SizeResult, timed: bool) -> None:
        """After a submission's call: its other threads are given a moment to fall idle, what
        they ran since it returned is counted, and the sandbox is frozen until its next
        request, so that from here to its next window nothing of it runs at all. Frozen, its GPU
        memory is what it keeps while the others run: read then, and past its budget it is
        stopped (grader/gpu_memory_wall.py)."""
        if timed:
            sandbox.idle.returned(sandbox)
            sandbox.idle.settle(sandbox)
            self.idle_check(sandbox, result)
            if sandbox.cgroup is None:
                sandbox.idle.returned(sandbox)  # not frozen: the rest of the gap is counted at the next call
        sandbox.rest()
        sandbox.hold_gpu_memory("its rest after a call")
        if sandbox.gpu_wall is not None:
            result.gpu_held_gib = round(sandbox.gpu_wall.most_bytes / gpu_ledger.GIB, 2)

    def idle_check(self, sandbox: Sandbox, result: SizeResult) -> None:
        """Work the submission's other threads and processes did since its last timed call."""
        worked = sandbox.idle.worked(sandbox)
        if worked is not None:
            result.idle_work_ms = max(result.idle_work_ms or 0.0, round(worked[0], 3))
        if worked is not None and worked[0] > idle_work.ALLOWED_MS:
            result.flag("background_thread", f"{worked[0]:.1f} ms of CPU outside the harness after a call returned "
                                             f"({', '.join(worked[1]) or 'threads that have ended'})")

    # -- sizes ---------------------------------------------------------------------------
    def grade_size(self, env: Environment, size: Size, label: str, rerun: int = 0) -> list[SizeResult]:
        """One size for this turn's submissions, in shared rounds: their results, in ``active`` order."""
        def attempt() -> list[SizeResult]:
            results = {role: SizeResult(size.id, size.kind, rerun, dict(size.dims), device=self.device.torch_name,
                                        env={"name": env.name, "version": env.version},
                                        throughput_unit=env.cost.unit) for role in self.active}
            with gpu_memory.attempting(list(results.values())):
                self._grade_size(env, size, label, results)
            return list(results.values())

        return gpu_memory.waiting_for_memory(attempt, self.device, self.gpu_wait_s)

    def _grade_size(self, env: Environment, size: Size, label: str, results: dict[str, SizeResult]) -> None:
        rounds.grade(self, env, size, label, results)

    def check_fuzzed(self, env: Environment, dims: dict, label: str, example: int, rerun: int = 0,
                     attempts: list[int] | None = None) -> list[SizeResult]:
        """One verified call at a Hypothesis-drawn size for each of ``attempts`` (default: the
        first), on the same inputs and reference (grader/fuzzed_call.py); their results, in order."""
        roles = [self.roles[i] for i in (attempts if attempts is not None else [0])]
        return fuzzed_call.check(self, env, dims, label, example, rerun, roles)
