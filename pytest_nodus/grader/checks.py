"""The checks every call's :class:`~pytest_nodus.grader.sandbox_process.Reading` goes through.

Each check turns a reading into findings; the *role* of the sandbox that made it decides
what a finding means:

============== ===================== ===================================== =====================
check          what it looks at      submission                            expert / baseline
============== ===================== ===================================== =====================
processes      /proc, the grader's   ``background_process``,               the same (only a
               adopted children      ``sandbox_escape``                    submission detaches)
reported       the sandbox's own     each flag as reported                 ignored (trusted code)
               tripwire flags
outputs        the grader's view of  overlap, late change, live children   not checked
               the outputs' bytes
raised         the report            ``raised``                            the grader's side failed
inputs         pristine copies       ``input_mutated``                     the grader's side failed
values         the reference         ``wrong_values``, ``non_finite_output`` expert: must pass;
                                                                           baseline: error noted
times          the report            ``protocol_violation`` if missing     the same
idle work      the scheduler, after  ``background_thread``                 not checked
               a timed call          (grader/idle_work.py, in grading.py)
held           the grader's wall     ``pending_work`` (GPU)                not checked
               time of arm, report
finished       the late-write check  each flag as reported;                not run
               and the audit, after  ``forbidden_op`` (trusted: waived)
               a size
============== ===================== ===================================== =====================

"The grader's side failed" raises: ``expert_failed`` (the size stays at the floor, never
the submission's verdict) or ``baseline_failed`` (the baseline is dropped; context only).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import torch

from pytest_nodus.grader import kernel_errors
from pytest_nodus.grader.correctness import check_outputs
from pytest_nodus.grader.processes import descendants, ended_orphans, living, stray_processes
from pytest_nodus.grader.results import SizeResult
from pytest_nodus.grader.reading import Reading
from pytest_nodus.grader.sandbox_process import SandboxFailure
from pytest_nodus.shared import protocol
from pytest_nodus.shared.bits import same_bits

# Reported flags after which the outputs are not values to compare (the snapshot holds poison).
STRUCTURAL = ("wrong_output", "wrong_shape", "wrong_dtype", "wrong_device", "tensor_subclass", "output_aliases_input")


@dataclass(frozen=True)
class Finding:
    code: str
    detail: str


def processes(reading: Reading, sandboxes, timed: bool, submission: bool) -> list[Finding]:
    """Processes a sandbox started that ran where its clock may not see them."""
    found = []
    if submission and timed and (ended := ended_orphans(reading.opened_boot_ticks)):
        found.append(Finding("background_process", f"process(es) {ended[:3]} left the sandbox's process tree and ran "
                                                   "during the call"))
    if strays := stray_processes(sandboxes):
        found.append(Finding("sandbox_escape", f"process(es) {strays[:3]} left the sandbox's process tree (killed)"))
    return found


def outputs(reading: Reading, slot, timed: bool) -> list[Finding]:
    """What the grader itself sees of the outputs it read: whether they lay over an input or
    each other (GPU), and whether they changed after the window closed; and whether a child
    process of the sandbox was still alive as a timed call returned (warm-up calls may
    compile, and compilers run as child processes)."""
    spans = reading.output_spans()  # the GPU's; on the CPU the outputs are not in the arena
    inputs = [reading.arena_span(v) for v in slot.inputs.values()]
    found = []
    for i, span in enumerate(spans):
        if span is None:
            continue
        if any(span[0] < hi and lo < span[1] for lo, hi in inputs + [s for s in spans[:i] if s is not None]):
            found.append(Finding("output_aliases_input", f"output {i} lies over an input or another output"))
    if timed and (alive := living(descendants(reading.pid))):
        found.append(Finding("background_process", f"{len(alive)} child process(es) of the sandbox alive during the call"))
    if changed := reading.changed_after_close():
        found.append(Finding("output_changed_after_return", f"output(s) {changed} changed after the call returned"))
    return found


# How long a call's arm or report may hold the grader (GPU). Neither runs the kernel's code:
# the harness scrubs, compares and clones outputs and synchronises: on average 3-14 ms an arm
# and 0.3-1.0 ms a report in sealed H100 grades (docs/results/moe_experts.md names the run).
# Longer, the harness's synchronise was waiting on GPU work the submission queued
# from a thread of its own after its call returned
# (tests/cheats/moe_experts/contend_with_the_experts_choice.py: 20-30 s in a report).
HELD_LIMIT_MS = 2000.0


def held(reading: Reading, cuda: bool) -> list[Finding]:
    """A request that runs none of the kernel's code, held past :data:`HELD_LIMIT_MS` (GPU):
    work the submission left running after a call, aimed at whoever runs next. The walls
    keep it from reaching another role (freezing, the idle probe, the set-up's wait); this
    takes out the attempt that tried, wherever its work landed."""
    if not cuda:
        return []  # a frozen CPU sandbox runs nothing, and its threads' work is idle work's
    return [Finding("pending_work", f"its sandbox held the call's {part} for {ms / 1e3:.1f} s, which runs none of "
                                    f"the kernel's code: the device was busy with work it had left running")
            for part, ms in reading.held_ms.items() if ms > HELD_LIMIT_MS]


def reported(reading: Reading) -> list[Finding]:
    """The sandbox's tripwire flags (raises if they are not well formed)."""
    flags = reading.report.get("flags")
    if not isinstance(flags, list) or not all(isinstance(f, dict) for f in flags):
        raise SandboxFailure("flagged", "protocol_violation", "malformed flags in the sandbox's reply")
    found = []
    for f in flags:
        found.append(Finding(str(f.get("code", "protocol_violation")), str(f.get("detail", ""))))
    return found


def raised(reading: Reading, kernel_path) -> str | None:
    """What the kernel raised, with the lines of its file that led there; None if it returned."""
    if reading.ok:
        return None
    return kernel_errors.describe(reading.report.get("error"), kernel_path)


def finished(env, trusted: bool, reply: dict, result: SizeResult) -> None:
    """After a size (``FINISH``): the sandbox's late-write flags and the kernel audit, whose
    forbidden kernels are flagged, or only recorded for a trusted submission."""
    flags = reply.get("flags")
    for f in flags if isinstance(flags, list) else []:
        if isinstance(f, dict):
            result.flag(str(f.get("code", "protocol_violation")), str(f.get("detail", "")))
    audit = reply.get("audit")
    if not isinstance(audit, dict):
        return
    if isinstance(audit.get("kernels"), list) and audit["kernels"]:
        result.kernels = audit["kernels"][:8]
    names = [str(n) for n in audit.get("ops", [])] + [str(k.get("name")) for k in audit.get("kernels", [])
                                                      if isinstance(k, dict)]
    for pattern in env.keep_out.audit:
        hit = next((n for n in names if re.search(pattern, n)), None)
        if hit is None:
            continue
        record = result.waive if trusted else result.flag
        record("forbidden_op", f"ran '{hit[:80]}', which this environment forbids")


def mutated_inputs(slot, fresh: dict) -> list[str]:
    return [name for name, value in fresh.items()
            if isinstance(value, torch.Tensor) and not same_bits(slot.inputs[name], value)]


def values(reading: Reading, references, env, inputs: dict):
    """Every output against the reference, or nothing when the outputs were not values."""
    codes = {str(f.get("code")) for f in reading.report.get("flags", [])}
    if codes & set(STRUCTURAL):
        return []
    rounded = None if env.rounded_reference is None else (lambda: env.rounded_reference(inputs))
    return check_outputs(reading.outputs, references, env.contract, env.tolerance, rounded, tuple(env.error_scales))


def times(reading: Reading) -> tuple[float, float]:
    for key in protocol.TIME_KEYS:
        value = reading.report.get(key)
        if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0):
            raise SandboxFailure("flagged", "protocol_violation", f"missing or invalid {key} in reply")
    return tuple(reading.report[key] for key in protocol.TIME_KEYS)


def value_flag(check) -> tuple[str, str]:
    code = "non_finite_output" if not math.isfinite(check.error) else "wrong_values"
    worst = f"; worst element {check.worst}" if check.worst else ""
    return code, f"output '{check.name}': error {check.error:.3g} > tolerance {check.limit:.3g}{worst}"


def children_ran(result: SizeResult, reading: Reading, child_ms: float) -> None:
    """Child processes of the sandbox ran, and ended, inside a timed call. Flagged from the
    second such call at a size.

    Once is what a compiler does: a correct torch.compile kernel
    (tests/correct/rmsnorm/torch_compile_own.py) spends 50-80 ms in children, none alive as the
    call began, in one of a size's 10 timed calls on the GPU. A kernel that works through
    child processes does so on every call (tests/cheats/rmsnorm/spawned_per_call.py). One
    such call cannot buy speed: the window holds the child's whole life, a process start
    costs far more than a call, and the median of the timed calls does not move for one."""
    result.calls_with_children += 1
    if result.calls_with_children >= 2:
        began = ", ".join(reading.children_at_open[:4]) or "none"
        result.flag("background_process", f"child processes of the sandbox ran in {result.calls_with_children} "
                                          f"timed calls, {child_ms:.3f} ms of CPU in this one (its children as it "
                                          f"began: {began})")
