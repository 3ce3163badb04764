"""The grade as an RL pipeline may show it to the agent that wrote the submission.

The full grade (``--nodus-json``) is for the pipeline and for people: it keeps every timed
call, the flags' details and the throughput of every size. Shown to an agent, each of those
is a channel for what the seal keeps from it: hidden dims spelled in an exception's words,
encoded in the low digits of a claimed time, or recovered from ``throughput x time``. This
report is built from the full grade by keeping, never by scrubbing:

- public sizes in full: dims, status, error and tolerance, the grader's times, speedup;
- hidden and fuzzed sizes: status and a speedup rounded to two significant digits;
- flags: the size's public id (or its kind), the code and a fixed sentence per code; no
  text the submission wrote (an exception is ``raised`` and one sentence);
- no claimed times, no throughput, no seed, no per-call readings.

What a hidden size still says is its speed: a kernel that slows itself on purpose can make
a hidden size's rounded speedup carry a few bits (two digits: under 7 bits per hidden size
per grade), at the price of its own reward.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

VERSION = "1"

# One fixed sentence per flag code: what went wrong, in the grader's words only.
MEANING = {
    "wrong_values": "an output differs from the reference by more than the tolerance",
    "non_finite_output": "an output holds NaN or infinity where the reference is finite",
    "wrong_shape": "an output has the wrong shape", "wrong_dtype": "an output has the wrong dtype",
    "wrong_device": "an output is on the wrong device", "wrong_output": "the kernel did not return the outputs asked for",
    "tensor_subclass": "an output is not a plain torch.Tensor",
    "output_aliases_input": "an output lies over an input's bytes or another output's",
    "input_mutated": "the kernel wrote to an input",
    "output_changed_after_return": "an output changed after the call returned",
    "background_thread": "a thread kept working after the call returned",
    "pending_work": "work was still queued after the call returned",
    "background_process": "a process the kernel started ran outside its calls",
    "below_physical_floor": "a call took less time than the hardware allows: its work was not timed",
    "forged_time": "the kernel's own report of its time disagrees with the grader's clock",
    "grader_tampering": "the kernel changed the grader's code or state",
    "forbidden_op": "the kernel used a library or op this environment forbids",
    "protocol_violation": "the kernel's process broke the grader's call protocol",
    "sandbox_escape": "the kernel tried to reach outside its sandbox",
    "raised": "the kernel raised an exception", "crashed": "the kernel's process crashed",
    "process_exit": "the kernel's process exited", "load_failed": "the kernel file could not be loaded",
    "over_limit": "the kernel's processes went past the task card's host memory, task or GPU memory limit",
    "sandbox_dead": "the kernel's process was gone", "harness_error": "the grader's harness failed in the kernel's process",
    "worker_died": "a grading worker died", "no_result": "a size produced no result",
    "expert_failed": "the grader's reference kernel failed (not the submission's fault)",
    "fuzz_failed": "a drawn size failed", "grader_out_of_memory": "the grader ran out of memory",
    "gpu_busy": "the GPU was held by another grade for too long",
    "gpu_contended": "another process kept the GPU busy while calls were timed or the expert set up", "timeout": "a call did not finish in time",
    "smallest_failing_size": "a smaller size fails too",
}
_UNKNOWN = "the grader flagged this size"
_PUBLIC_FIELDS = ("status", "dims", "error", "tolerance", "t_submission_ms", "t_expert_ms", "speedup")


def _two_digits(value: float | None) -> float | None:
    if value is None or not math.isfinite(value) or value <= 0:
        return None
    return float(f"{value:.2g}")


def _where(size: str, public_ids: set) -> str:
    """A flag's size as the agent may see it: a public id whole, a hidden one as its index."""
    if size in public_ids:
        return size
    if size.startswith("hidden-"):
        return size.split(":", 1)[0]
    return "fuzz" if size.startswith("fuzz") else "grade"


def build(document: dict) -> dict:
    """The agent-safe report of a full grade document."""
    sizes, public_ids = [], set()
    for s in document["sizes"]:
        if s["kind"] == "public":
            public_ids.add(s["id"])
            sizes.append({"id": s["id"], "kind": "public", "rerun": s["rerun"], **{k: s[k] for k in _PUBLIC_FIELDS}})
        else:
            label = s["kind"] if s["kind"] == "fuzz" else s["id"]  # hidden-N: an index, no dims
            sizes.append({"id": label, "kind": s["kind"], "rerun": s["rerun"], "status": s["status"],
                          "speedup": _two_digits(s["speedup"])})
    flags = []
    for f in document["flags"]:
        entry = {"size": _where(f["size"], public_ids), "rerun": f["rerun"], "code": f["code"],
                 "meaning": MEANING.get(f["code"], _UNKNOWN)}
        if entry not in flags:
            flags.append(entry)
    return {"agent_report_version": VERSION, "env": document["env"], "status": document["status"],
            "reward": None if document["reward"] is None else round(document["reward"], 2),
            "speedup": _two_digits(document["speedup"]),
            "sealed": document["sealed"], "sizes": sizes, "flags": flags}


def write(document: dict, path: Path) -> None:
    Path(path).write_text(json.dumps(build(document), indent=2) + "\n")


def lines(report: dict) -> list[str]:
    """The agent report as terminal text."""
    paid = "none (CPU check)" if report["reward"] is None else f"{report['reward']:.2f}"
    out = [f"environment {report['env']['name']} | status {report['status']} | reward {paid}"
           + (f" | speedup {report['speedup']}x" if report["speedup"] else "")]
    for s in report["sizes"]:
        speed = f"{s['speedup']:.3g}x" if s.get("speedup") else "-"
        if s["kind"] == "public":
            error = f"{s['error']:.2e}/{s['tolerance']:.1e}" if s["error"] is not None and s["tolerance"] else "-"
            times = (f"{s['t_submission_ms']:.4f} ms vs expert {s['t_expert_ms']:.4f} ms"
                     if s["t_submission_ms"] is not None and s["t_expert_ms"] is not None else "untimed")
            out.append(f"  {s['id']:<32} r{s['rerun']} {s['status']:<8} {error:>17}  {times}  {speed}")
        else:
            out.append(f"  {s['id']:<32} r{s['rerun']} {s['status']:<8} {'':>17}  {speed}")
    for f in report["flags"]:
        out.append(f"  flag {f['code']} at {f['size']} (rerun {f['rerun']}): {f['meaning']}")
    return out
