"""From per-size verdicts to one number an RL pipeline can train on.

Correct everywhere: ``reward = log2(geometric mean over timed sizes of t_expert / t_sub)``,
so 0 means as fast as the expert, +1 twice as fast, and the reward moves smoothly with
speed. Anything else (a wrong value, a flag, an error, a timeout, a size with no result)
gives :data:`FLOOR`, below any speed a real kernel could reach, so no cheat can ever be
paid more than the slowest honest kernel.

On the CPU a correct grade has no reward (:func:`paid`): its times compare a kernel run by
the Triton interpreter, which executes every program instance in Python, with the compiled
torch expert, and say nothing about either on a GPU. A CPU grade is a correctness check;
its failures still score the floor, which is what the cheat corpus holds in CI.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

FLOOR = -24.0

STATUSES = ("correct", "wrong", "error", "timeout", "flagged")
# When several things went wrong the grade names the most serious: a detected cheat over
# a hang over a crash over a wrong value.
_SEVERITY = {status: rank for rank, status in enumerate(STATUSES)}

FLAG_STATUS = {
    # the values are wrong
    "wrong_values": "wrong", "non_finite_output": "wrong", "wrong_shape": "wrong", "wrong_dtype": "wrong",
    "wrong_device": "wrong", "wrong_output": "wrong",
    # the submission did something a correct kernel never does
    "tensor_subclass": "flagged", "output_aliases_input": "flagged", "input_mutated": "flagged",
    "output_changed_after_return": "flagged", "background_thread": "flagged", "pending_work": "flagged",
    "background_process": "flagged", "below_physical_floor": "flagged", "forged_time": "flagged",
    "grader_tampering": "flagged", "forbidden_op": "flagged", "protocol_violation": "flagged",
    "sandbox_escape": "flagged",
    # it did not finish
    "raised": "error", "crashed": "error", "process_exit": "error", "over_limit": "error", "load_failed": "error",
    "sandbox_dead": "error", "harness_error": "error", "worker_died": "error", "no_result": "error",
    "expert_failed": "error", "fuzz_failed": "error", "grader_out_of_memory": "error",
    "gpu_busy": "error", "gpu_contended": "error",
    "timeout": "timeout",
}


def status_of(codes) -> str:
    statuses = [FLAG_STATUS.get(code, "flagged") for code in codes]
    return worst(statuses) if statuses else "correct"


def worst(statuses) -> str:
    return max(statuses, key=_SEVERITY.__getitem__, default="correct")


@dataclass(frozen=True)
class Verdict:
    status: str
    reward: float
    speedup: float | None  # geometric mean of t_expert / t_submission over timed sizes


# What the reward of a grade is based on (the JSON's ``reward_basis``).
SPEED_VS_EXPERT = "speed_vs_expert"
CPU_CHECK = "cpu_check"
# A local check timed against the environment's starting kernel (--nodus-against), where the
# grader's experts are not installed: its speedup says how far the author has come, and pays nothing.
VS_STARTING_KERNEL = "vs_starting_kernel"


def basis(device_kind: str, against: str = "expert") -> str:
    if against == "starting_kernel":
        return VS_STARTING_KERNEL
    return CPU_CHECK if device_kind == "cpu" else SPEED_VS_EXPERT


def paid(v: Verdict, reward_basis: str) -> float | None:
    """The reward a pipeline may pay: the verdict's, except that a correct grade on another
    basis than the speed against the expert on a GPU has none."""
    return None if v.status == "correct" and reward_basis != SPEED_VS_EXPERT else v.reward


def verdict(size_results) -> Verdict:
    """``size_results``: dicts with ``status``, ``timed`` and ``speedup`` (see grading)."""
    if not size_results:
        return Verdict("error", FLOOR, None)
    status = worst(r["status"] for r in size_results)
    speedups = [r["speedup"] for r in size_results if r.get("timed") and r.get("speedup")]
    speedup = math.exp(statistics.fmean(math.log(s) for s in speedups)) if speedups else None
    if status != "correct":
        return Verdict(status, FLOOR, speedup)
    if speedup is None:  # correct but nothing was timed: no basis for a reward
        return Verdict("error", FLOOR, None)
    return Verdict("correct", math.log2(speedup), speedup)
