"""Grade one size: the procedure that ties inputs, sandboxes, correctness and timing together.

A timed size runs ``warmup + timed`` rounds. Each round makes fresh inputs, then calls
the expert and the submission on them (order alternating), each in its own sandbox, each
call verified against the reference computed here from the grader's pristine copy. Warm-up
calls are verified like the rest; only their times are dropped. A fuzzed size is one
verified call of the submission alone.

Everything the submission could influence is decided here, in the grader process: the
values in the receipts, whether the inputs came back untouched, which kernels ran, and
whether its claimed times agree with the grader's clock.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from pytest_nodus import devices, inputs, reward, timing, transport
from pytest_nodus.correctness import check_outputs, same_bits
from pytest_nodus.environment import Environment, Size
from pytest_nodus.isolation import (Sandbox, SandboxFailure, adopt_orphans, descendants, ended_orphans, living,
                                    stray_processes)


@dataclass(frozen=True)
class TimingPlan:
    warmup: int
    timed: int


PLANS = {"cuda": TimingPlan(warmup=3, timed=20), "cpu": TimingPlan(warmup=1, timed=3)}

# The expert's and the baselines' first call at a new size may compile: FlexAttention's cold
# torch.compile took 223 s on the H200 (run 14), past attention's 120 s call limit. They are
# the grader's own trusted code, so that first call gets this much; the submission never does.
TRUSTED_FIRST_CALL_TIMEOUT_S = 900.0


@dataclass
class SizeResult:
    """One size's verdict; ``as_json`` is what crosses xdist and lands in the report."""

    id: str
    kind: str
    rerun: int
    dims: dict | None
    status: str = "correct"
    flags: list[dict] = field(default_factory=list)
    error: float | None = None
    tolerance: float | None = None
    t_submission_ms: float | None = None
    t_expert_ms: float | None = None
    t_submission_iqr_ms: float | None = None
    t_expert_iqr_ms: float | None = None
    t_submission_grader_ms: float | None = None  # per call on the grader's clock (pytest_nodus.clock)
    t_submission_claimed_ms: float | None = None  # per call as the sandbox reported it
    speedup: float | None = None
    throughput: float | None = None
    throughput_unit: str | None = None
    expert_error: float | None = None
    # Context only (--nodus-baselines): other production kernels timed in the same rounds.
    t_baselines_ms: dict | None = None
    baseline_errors: dict | None = None
    baseline_notes: dict | None = None
    calls: int = 0
    env: dict | None = None
    isolation: str | None = None
    removed_fatbins: int | None = None  # torch fatbins taken out of the submission's process
    kernels: list[dict] | None = None
    device: str | None = None  # which device graded it ("cuda:1" under xdist worker gw1)
    calls_with_children: int = 0  # timed calls in which child processes ran and ended (_children_ran)
    # Every timed call's three readings, per role: what the medians came from. A rerun whose
    # median moved (the attention solution at hidden-1, 0.20 against 0.56 ms, H200 run 39)
    # can then be read call by call.
    timed_calls: dict | None = None
    # --nodus-trusted only: forbidden-kernel findings kept for the record, not scored.
    waived_flags: list[dict] | None = None

    @property
    def timed(self) -> bool:
        return self.kind in ("public", "hidden")

    def public_text(self, detail: str) -> str:
        # Hidden sizes stay hidden: no dims in any message that reaches a report.
        return re.sub(r"\d{2,}", "#", detail) if self.kind == "hidden" else detail

    def flag(self, code: str, detail: str) -> None:
        detail = self.public_text(detail)
        if not any(f["code"] == code for f in self.flags):
            self.flags.append({"size": self.id, "code": code, "detail": detail[:300]})
        self.status = reward.status_of(f["code"] for f in self.flags)

    def waive(self, code: str, detail: str) -> None:
        """Record what ``flag`` would have raised, without scoring it (--nodus-trusted)."""
        waived = {"size": self.id, "code": code, "detail": self.public_text(detail)[:300]}
        self.waived_flags = self.waived_flags or []
        if waived not in self.waived_flags:
            self.waived_flags.append(waived)

    def note_error(self, error: float, limit: float) -> None:
        """Keep the worst error seen (relative to its tolerance) over all calls and outputs."""
        if self.error is None or error / limit > self.error / self.tolerance:
            self.error, self.tolerance = error, limit

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["timed"] = self.timed
        if self.kind == "hidden":
            data["dims"] = None
        for key in ("error", "expert_error"):
            if data[key] is not None and not math.isfinite(data[key]):
                data[key] = None if math.isnan(data[key]) else 1e308
        return data


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0


class Grader:
    """Per-process (per xdist worker) owner of the sandboxes and the grade seed."""

    def __init__(self, submission: Path, device: devices.Device, grade_seed: int, audit: bool = True,
                 expert_cache: Path | None = None, baselines: bool = False, trusted: bool = False):
        self.submission = Path(submission)
        self.device = device
        self.torch_device = torch.device(device.torch_name)
        self.grade_seed = grade_seed
        self.audit = audit
        self.expert_cache = expert_cache
        self._fatbins: dict[str, dict] = {}  # environment name -> fatbins removed from submissions
        self.baselines = baselines
        # A trusted submission (the expert graded against itself, to calibrate the timer) may
        # run the kernels the environment forbids; every other check still applies.
        self.trusted = trusted
        self._failed_baselines: set[str] = set()  # a baseline that failed once is not retried this grade
        self.plan = PLANS[device.kind]
        self.call_timeout_override: float | None = None
        self.gpu_wait_s = devices.GPU_WAIT_S  # --nodus-gpu-wait
        # A submission that hung once is not given the device again in this grade: every
        # further size would cost another full time limit for the same verdict.
        self._hung: SandboxFailure | None = None
        self._sandboxes: dict[tuple[str, str], Sandbox] = {}
        self._placers: dict[tuple[str, str], inputs.ArenaPlacer] = {}  # one per sandbox, over its arena
        self.planned_dims: dict[str, list] = {}  # env name -> dims of every timed size
        self._load_failures: dict[tuple[str, str], SandboxFailure] = {}
        self._warmed: set[tuple] = set()  # (sandbox pid, dims) a trusted sandbox has already run

    def close(self) -> None:
        for sandbox in self._sandboxes.values():
            sandbox.close()
        self._sandboxes.clear()
        stray_processes([])  # whatever a sandbox detached and no later call found: nothing outlives the grade

    # -- sandboxes ------------------------------------------------------------------
    def _arena_capacity(self, env: Environment, dims) -> int:
        """Room for two calls of the largest planned size (public and hidden) or of ``dims``."""
        planned = [*self.planned_dims.get(env.name, ()), dims]
        largest = max(env.contract.call_bytes(d) for d in planned)
        tensors = len(env.contract.tensor_inputs) + len(env.contract.outputs)
        return 2 * (largest + (tensors + 1) * transport.ALIGN)

    def _removed_kernels(self, env) -> dict | None:
        """The fatbins of torch's CUDA library that hold kernels ``env`` removes from a
        submission's process (pytest_nodus.fatbin), found once per grader (and cached on disk
        per torch build). None when the environment removes nothing or off the GPU."""
        if not env.removed_kernels or self.device.kind != "cuda":
            return None
        if env.name not in self._fatbins:
            from pytest_nodus import fatbin

            library = fatbin.loaded_library("libtorch_cuda")
            if library is None:
                raise RuntimeError("torch's CUDA library is not loaded: cannot remove kernels from submissions")
            cache = self.expert_cache.parent / "fatbins" if self.expert_cache else None
            major, minor = torch.cuda.get_device_capability(self.torch_device)
            found = fatbin.forbidden_fatbins(library, env.removed_kernels, cache, gpu=f"sm_{major}{minor}")
            if not found["spans"]:
                # Stale patterns (a torch build whose kernels are named otherwise) must not
                # quietly let the kernels back in.
                raise RuntimeError(f"environment '{env.name}': no kernel of {library} matches "
                                   f"removed_kernels {env.removed_kernels}")
            self._fatbins[env.name] = found
        return self._fatbins[env.name]

    def _sandbox(self, env: Environment, role: str, dims) -> Sandbox:
        """``role`` is "submission", "expert" or "baseline:<name>"."""
        key = (role, env.name)
        if key in self._load_failures:
            raise self._load_failures[key]  # a file that did not load will not load next time
        sandbox = self._sandboxes.get(key)
        capacity = self._arena_capacity(env, dims)
        if sandbox is not None and sandbox.alive and sandbox.arena.numel() >= capacity:
            return sandbox
        if sandbox is not None:
            sandbox.close()
        if role == "submission":
            path = self.submission
        elif role == "expert":
            path = env.expert.get(self.device.kind)
        else:
            path = env.baselines.get(self.device.kind, {}).get(role.split(":", 1)[1])
        if path is None:
            raise SandboxFailure("error", "expert_failed", f"environment '{env.name}' has no {role} for {self.device.kind}")
        process_role = role.split(":", 1)[0]
        kept_out = process_role == "submission" and not self.trusted
        removed = self._removed_kernels(env) if kept_out else None
        sandbox = Sandbox(path, process_role, self.device.torch_name, env.contract.entry_point,
                          audit=self.audit and bool(env.forbidden) and process_role != "baseline",
                          cache_dir=self.expert_cache if process_role != "submission" else None,
                          # A trusted submission is the expert itself (calibration): it needs the
                          # libraries a submission is kept from.
                          unreadable_libraries=env.unreadable_libraries if kept_out else (),
                          unreadable_packages=env.unreadable_packages if kept_out else (),
                          removed_kernels=removed,
                          removed_templates=env.removed_templates if kept_out else ())
        # A process that leaves a sandbox's tree comes back here (stray_processes). Set at the
        # first start, not at construction: a Grader that starts nothing changes nothing.
        adopt_orphans()
        try:
            sandbox.start(capacity)
        except SandboxFailure as failure:
            sandbox.close()
            if failure.code == "load_failed":
                self._load_failures[key] = failure
            raise
        self._sandboxes[key] = sandbox
        self._placers[key] = inputs.ArenaPlacer(sandbox.arena)
        return sandbox

    def _timeout(self, env: Environment) -> float:
        if self.call_timeout_override is not None:
            return self.call_timeout_override
        return env.call_timeout_s if self.device.kind == "cuda" else env.cpu_call_timeout_s

    # -- one call -----------------------------------------------------------------------
    def _call(self, env, sandbox: Sandbox, dims, fresh: dict, references, result: SizeResult, role: str,
              timed: bool):
        """One verified call. Returns (CallTimes, references) or raises SandboxFailure."""
        timeout = self._timeout(env)
        first_call = (sandbox.process.pid, tuple(sorted(dims.items())))  # a restarted sandbox compiles again
        if role != "submission" and first_call not in self._warmed:
            timeout = max(timeout, TRUSTED_FIRST_CALL_TIMEOUT_S)
        outputs = [(spec.concrete_shape(dims), spec.dtype) for spec in env.contract.outputs]
        slot = self._placers[(role, env.name)].place(fresh, outputs)
        scalars = {k: v for k, v in fresh.items() if not isinstance(v, torch.Tensor)}
        order = [spec.name for spec in env.contract.inputs]
        baseline = role.startswith("baseline:")
        if baseline:
            slot.write_now(fresh)  # a baseline's untimed prepare reads them while armed
        reply, receipts, grader_ms = self._clocked_call(
            sandbox, {"op": "call", "layout": slot.layout, "scalars": scalars, "order": order},
            [] if baseline else slot.copies(fresh), slot.receipts, timeout)
        submission = role == "submission"
        if submission and reply.get("ok"):
            for code, detail in self._output_findings(sandbox, slot, timed):
                result.flag(code, detail)
            if timed and (child_ms := sandbox.clock.helper_ms):
                self._children_ran(sandbox, child_ms, result)
        if timed and submission and (ended := ended_orphans(sandbox.clock.opened_boot_ticks)):
            result.flag("background_process", f"process(es) {ended[:3]} left the sandbox's process tree and ran "
                                              "during the call")
        if strays := stray_processes(self._sandboxes.values()):
            # Only a submission detaches processes; the grader's own files do not.
            result.flag("sandbox_escape", f"process(es) {strays[:3]} left the sandbox's process tree (killed)")
        flags = reply.get("flags")
        if not isinstance(flags, list) or not all(isinstance(f, dict) for f in flags):
            raise SandboxFailure("flagged", "protocol_violation", "malformed flags in the sandbox's reply")
        if submission:
            for f in flags:
                code = str(f.get("code", "protocol_violation"))
                if code == "background_thread" and not timed:
                    # torch.compile and tqdm start threads while compiling (a size's first
                    # calls); a thread kept from then on is caught by the late-write check.
                    continue
                result.flag(code, str(f.get("detail", "")))
        if not reply.get("ok"):
            error = reply.get("error") or {}
            detail = f"{error.get('type', 'Error')}: {error.get('message', '')} {error.get('where', '')}".strip()
            raise SandboxFailure("error", "raised", f"the kernel raised {detail}")
        if references is None:
            references = env.reference(fresh)
        for name, value in fresh.items():
            if isinstance(value, torch.Tensor) and not same_bits(slot.inputs[name], value):
                if role.startswith("baseline:"):
                    raise SandboxFailure("error", "baseline_failed", f"changed input '{name}'")
                if submission:
                    result.flag("input_mutated", f"input '{name}' was changed by the call")
                else:
                    raise SandboxFailure("error", "expert_failed", f"the expert changed input '{name}'")
        if not any(f["code"] in ("wrong_output", "wrong_shape", "wrong_dtype", "wrong_device", "tensor_subclass",
                                 "output_aliases_input") for f in flags):
            for check in check_outputs(receipts, references, env.contract, env.tolerance):
                if submission:
                    result.note_error(check.error, check.limit)
                    if not check.passed:
                        code = "non_finite_output" if not math.isfinite(check.error) else "wrong_values"
                        result.flag(code, f"output '{check.name}': error {check.error:.3g} > tolerance {check.limit:.3g}")
                elif role.startswith("baseline:"):
                    name = role.removeprefix("baseline:")
                    result.baseline_errors = result.baseline_errors or {}
                    result.baseline_errors[name] = max(result.baseline_errors.get(name, 0.0), check.error / check.limit)
                else:
                    result.expert_error = max(result.expert_error or 0.0, check.error)
                    if not check.passed:
                        raise SandboxFailure("error", "expert_failed",
                                             f"the expert's '{check.name}' misses tolerance ({check.error:.3g})")
        for key in ("t_stream_ms", "t_call_ms"):
            if not _is_number(reply.get(key)):
                raise SandboxFailure("flagged", "protocol_violation", f"missing or invalid {key} in reply")
        self._warmed.add(first_call)
        return timing.CallTimes(reply["t_stream_ms"], reply["t_call_ms"], grader_ms), references

    @staticmethod
    def _clocked_call(sandbox: Sandbox, arm: dict, copies, receipts, timeout: float):
        """Arm, open the grader's window, go. Returns (the sandbox's report, the receipts to
        verify (the grader's snapshot when the call ran), the window's ms or None)."""
        reply = sandbox.request(arm, timeout)
        if reply.get("ok") and reply.get("stage") != "armed":
            raise SandboxFailure("flagged", "protocol_violation", "the sandbox did not arm the call")
        if not reply.get("ok"):
            return reply, receipts, None  # prepare failed (a trusted file): reported as it raised
        grader_ms = None
        call_number = sandbox.clock.open(copies, receipts)
        try:
            sandbox.send({"op": "go", "call": call_number})
            reply = sandbox.receive(timeout, during="a call")
            if not reply.get("ok"):
                return reply, receipts, None  # the kernel raised
            if reply.get("stage") != "enqueued":
                raise SandboxFailure("flagged", "protocol_violation", "the sandbox reported a call it never enqueued")
            snapshot = sandbox.clock.close(receipts, reply.get("outputs"))
            if not sandbox.clock.cuda:
                sandbox.send({"op": "ack"})  # the outputs are read and the clock is closed
            reply = sandbox.receive(timeout, during="a call's report")
            grader_ms = sandbox.clock.elapsed_ms(timeout)
            if grader_ms is None and sandbox.clock.cuda:
                raise SandboxFailure("timeout", "timeout", f"the call did not finish on the GPU within {timeout:.0f} s")
            return reply, snapshot, grader_ms
        finally:
            if grader_ms is None:
                sandbox.clock.release()  # its flag will never be written: free the grader's stream

    @staticmethod
    def _children_ran(sandbox: Sandbox, child_ms: float, result: SizeResult) -> None:
        """Child processes of the sandbox ran, and ended, inside a timed call (their CPU time,
        pytest_nodus.clock._ended_between). Flagged from the second such call at a size.

        Once is what a compiler does: a correct torch.compile kernel (tests/correct/rmsnorm/
        torch_compile_own.py) ran 50-80 ms of children, none alive as the call began, in one
        of the 20 timed calls at one size (run 33) and at three (run 34), in its first rerun
        only. A kernel that works through child processes does so on every call
        (tests/cheats/rmsnorm/spawned_per_call.py). One such call cannot buy speed: the
        window holds the child's whole life (on the CPU its CPU time, on the GPU the wall
        time until the flag), a process start costs far more than a call, and the median of
        the timed calls does not move for one slow call."""
        result.calls_with_children += 1
        if result.calls_with_children >= 2:
            began = ", ".join(sandbox.clock.children_at_open[:4]) or "none"
            result.flag("background_process", f"child processes of the sandbox ran in {result.calls_with_children} "
                                              f"timed calls, {child_ms:.3f} ms of CPU in this one (its children as it "
                                              f"began: {began})")

    @staticmethod
    def _output_findings(sandbox: Sandbox, slot, timed: bool) -> list[tuple[str, str]]:
        """What the grader itself sees of the outputs it read: whether they lay over an input
        or each other (GPU), and whether they changed after the window closed; and whether a
        child process of the sandbox was still alive as a timed call returned (warm-up calls
        may compile, and compilers run as child processes; see also _children_ran)."""
        spans = sandbox.clock.output_spans()  # the GPU's; on the CPU the outputs are not in the arena
        base = sandbox.clock.arena.data_ptr()
        inputs = [(v.data_ptr() - base, v.data_ptr() - base + v.numel() * v.element_size()) for v in slot.inputs.values()]
        findings = []
        for i, span in enumerate(spans):
            if span is None:
                continue
            if any(span[0] < hi and lo < span[1] for lo, hi in inputs + [s for s in spans[:i] if s is not None]):
                findings.append(("output_aliases_input", f"output {i} lies over an input or another output"))
        if timed and (alive := living(descendants(sandbox.process.pid))):
            findings.append(("background_process", f"{len(alive)} child process(es) of the sandbox alive during the call"))
        changed = sandbox.clock.changed_since_close()
        if changed:
            findings.append(("output_changed_after_return", f"output(s) {changed} changed after the call returned"))
        return findings

    def _finish_flags(self, env: Environment, reply: dict, result: SizeResult) -> None:
        flags = reply.get("flags")
        for f in flags if isinstance(flags, list) else []:
            if isinstance(f, dict):
                result.flag(str(f.get("code", "protocol_violation")), str(f.get("detail", "")))
        self._audit(env, reply.get("audit"), result)

    def _audit(self, env: Environment, audit, result: SizeResult) -> None:
        if not isinstance(audit, dict):
            return
        if isinstance(audit.get("kernels"), list) and audit["kernels"]:
            result.kernels = audit["kernels"][:8]
        names = [str(n) for n in audit.get("ops", [])] + [str(k.get("name")) for k in audit.get("kernels", [])
                                                          if isinstance(k, dict)]
        for pattern in env.forbidden:
            hit = next((n for n in names if re.search(pattern, n)), None)
            if hit is None:
                continue
            record = result.waive if self.trusted else result.flag
            record("forbidden_op", f"ran '{hit[:80]}', which this environment forbids")

    # -- sizes ---------------------------------------------------------------------------
    def _grader_out_of_memory(self, result: SizeResult, exc: BaseException) -> SizeResult:
        """The grader's own allocation (fresh inputs, references, pristine copies) failed.

        Run 32 graded the attention solution beside eight other grades on one H200: their
        processes held the GPU's memory and the grader's ``make_inputs`` raised. That is not the
        submission's verdict, but no grade can vouch for a size it did not run, so the size
        stays at the floor under a code of its own: a pipeline retries it on a GPU that is not
        shared, where ``no_result`` ("its worker died?") had named no cause."""
        detail = f"{type(exc).__name__}"
        if self.device.kind == "cuda":
            free, total = torch.cuda.mem_get_info(self.torch_device)
            detail += (f": {free / 2**20:.0f} MiB free of {total / 2**30:.0f} GiB on {self.device.torch_name}; "
                       "other processes hold the rest (several grades on one GPU?)")
        result.flag("grader_out_of_memory", detail)
        self._release_memory()
        return result

    def grade_size(self, env: Environment, size: Size, label: str, rerun: int = 0) -> SizeResult:
        result = SizeResult(size.id, size.kind, rerun, dict(size.dims), env={"name": env.name, "version": env.version},
                            device=self.device.torch_name, throughput_unit=env.throughput_unit)
        try:
            return self._grade_size(env, size, label, result)
        except torch.OutOfMemoryError as exc:
            return self._grader_out_of_memory(result, exc)
        except devices.DeviceBusy as busy:
            # Not the submission's doing either, and no grade vouches for a size it did not
            # time: the floor, under a code a pipeline can retry on.
            result.flag("gpu_busy", str(busy))
            return result

    def _grade_size(self, env: Environment, size: Size, label: str, result: SizeResult) -> SizeResult:
        if self._hung is not None:
            result.flag(self._hung.code, f"not run: the submission already hung ({self._hung.detail})")
            return result
        try:
            expert = self._sandbox(env, "expert", size.dims)
        except SandboxFailure as failure:
            result.flag("expert_failed", f"the expert did not start: {failure}")
            return result
        try:
            submission = self._sandbox(env, "submission", size.dims)
        except SandboxFailure as failure:
            result.flag(failure.code, failure.detail)
            return result
        result.isolation, result.removed_fatbins = submission.isolation, submission.removed_fatbins
        sandboxes = {"expert": expert, "submission": submission}
        times: dict[str, list[timing.CallTimes]] = {"expert": [], "submission": []}
        baselines = self._baseline_sandboxes(env, size, result) if size.kind in ("public", "hidden") else {}
        times.update({role: [] for role in baselines})
        plan = TimingPlan(*env.timing_rounds[self.device.kind]) if self.device.kind in env.timing_rounds else self.plan
        with devices.exclusive(self.device, self.gpu_wait_s):
            try:
                for round_number in range(plan.warmup + plan.timed):
                    seed = inputs.call_seed(self.grade_seed, label, round_number)
                    fresh = inputs.make_inputs(env, size.dims, seed, self.torch_device)
                    references = None
                    roles = ("expert", "submission") if round_number % 2 == 0 else ("submission", "expert")
                    for role in roles:
                        timed = round_number >= plan.warmup
                        try:
                            call, references = self._call(env, sandboxes[role], size.dims, fresh, references,
                                                          result, role, timed)
                        except SandboxFailure as failure:
                            if role == "expert" and failure.code != "expert_failed":
                                # The grader's own side broke: never the submission's verdict.
                                raise SandboxFailure("error", "expert_failed", f"the expert: {failure}") from None
                            raise
                        result.calls += role == "submission"
                        if timed:
                            times[role].append(call)
                    for role in list(baselines):
                        try:
                            call, references = self._call(env, baselines[role], size.dims, fresh, references, result,
                                                          role, timed=False)
                        except SandboxFailure as failure:  # context only: drop it, keep grading
                            self._baseline_failed(result, role.removeprefix("baseline:"), str(failure))
                            del baselines[role], times[role]
                            continue
                        if round_number >= plan.warmup:
                            times[role].append(call)
                for role in ("expert", "submission"):
                    reply = sandboxes[role].request({"op": "finish"}, self._timeout(env))
                    if role == "submission":
                        self._finish_flags(env, reply, result)
            except SandboxFailure as failure:
                result.flag(failure.code, failure.detail)
                if failure.status == "timeout":
                    self._hung = failure
                return result
        self._summarise_times(env, size, times, result)
        self._release_memory()
        return result

    def _release_memory(self) -> None:
        # References and pristine copies are cached by torch's allocator; handing them back
        # leaves the GPU memory to the sandboxes (a correct kernel must never hit an OOM
        # because the grader kept a previous size's buffers).
        if self.device.kind == "cuda":
            torch.cuda.empty_cache()

    def _baseline_sandboxes(self, env: Environment, size: Size, result: SizeResult) -> dict[str, Sandbox]:
        if not self.baselines:
            return {}
        started = {}
        for name in env.baselines.get(self.device.kind, {}):
            if name in self._failed_baselines:
                self._baseline_failed(result, name, "failed at an earlier size of this grade")
                continue
            try:
                started[f"baseline:{name}"] = self._sandbox(env, f"baseline:{name}", size.dims)
            except SandboxFailure as failure:
                self._baseline_failed(result, name, f"did not start: {failure}")
        return started

    def _baseline_failed(self, result: SizeResult, name: str, why: str) -> None:
        # A baseline that hangs would otherwise cost a full call time limit at every size.
        self._failed_baselines.add(name)
        result.baseline_notes = {**(result.baseline_notes or {}), name: result.public_text(why)[:200]}

    def _summarise_times(self, env, size, times, result: SizeResult) -> None:
        result.timed_calls = {role: [c.as_json() for c in calls] for role, calls in times.items()}
        summary = timing.summarise(times, self.device.kind)
        for code, reason in summary.flags:
            result.flag(code, reason)
        result.t_submission_grader_ms = summary.grader_ms
        result.t_expert_ms, result.t_expert_iqr_ms = summary.expert.median, summary.expert.iqr
        result.t_submission_claimed_ms, result.t_submission_iqr_ms = summary.claimed.median, summary.claimed.iqr
        result.t_submission_ms = summary.submission_ms
        result.t_baselines_ms = summary.baselines_ms or None
        if result.t_submission_ms and result.t_expert_ms:
            result.speedup = result.t_expert_ms / result.t_submission_ms
            result.throughput = env.throughput(size.dims, result.t_submission_ms)
        if self.device.kind != "cuda":
            return  # CPU times are reported and held to the grader's clock; no floor
        peaks = self.device.peaks
        if peaks is not None:
            floor = devices.FLOOR_FRACTION * env.physical_floor_ms(size.dims, peaks.bytes_per_s, peaks.flops_per_s)
            if (reason := timing.floor_flag(result.t_submission_ms, floor)) is not None:
                result.flag("below_physical_floor", reason)

    def check_fuzzed(self, env: Environment, dims: dict, label: str, example: int, rerun: int = 0) -> SizeResult:
        """One verified call of the submission alone at a Hypothesis-drawn size.

        The inputs are a function of the grade seed, ``label`` and the dims, not of the
        example number: Hypothesis replays a failing size while it shrinks and once more at
        the end, and a replay with other values can pass by chance (a one-element row), which
        left the reported size half-shrunk. Different sizes still get different values."""
        result = SizeResult(f"fuzz-{example}", "fuzz", rerun, dict(dims), env={"name": env.name, "version": env.version},
                            device=self.device.torch_name)
        if self._hung is not None:
            result.flag(self._hung.code, f"not run: the submission already hung ({self._hung.detail})")
            return result
        try:
            submission = self._sandbox(env, "submission", dims)
            result.isolation, result.removed_fatbins = submission.isolation, submission.removed_fatbins
            size_label = f"{label}/{sorted(dims.items())}"
            fresh = inputs.make_inputs(env, dims, inputs.call_seed(self.grade_seed, size_label, rerun), self.torch_device)
            self._call(env, submission, dims, fresh, None, result, "submission", timed=False)
            result.calls = 1
            reply = submission.request({"op": "finish"}, self._timeout(env))
            self._finish_flags(env, reply, result)
        except SandboxFailure as failure:
            result.flag(failure.code, failure.detail)
            if failure.status == "timeout":
                self._hung = failure
        except torch.OutOfMemoryError as exc:
            return self._grader_out_of_memory(result, exc)
        self._release_memory()
        return result
