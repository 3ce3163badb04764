"""One size's verdict as the grade records it (the JSON's ``sizes`` entries).

A :class:`SizeResult` is what crosses from an xdist worker to the controller (as
``user_properties``) and lands in the report; ``as_json`` is its schema form.
"""

from __future__ import annotations

import math
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from pytest_nodus.grader import reward

# A flag's detail: room for an exception and the six lines of the author's file under it
# (grader/kernel_errors.py), each cut at 160 characters.
DETAIL_CHARS = 1200


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
    t_submission_grader_ms: float | None = None  # per call on the grader's clock: t_submission_ms (grader/clock.py)
    overhead_ms: float | None = None  # the window's fixed cost on the expert's claims (grader/timing.py)
    # The one taken off the submission's windows: at most the expert's. Its digits carry no
    # more than t_submission_ms's: the submission moves it only by lengthening its own time.
    submission_overhead_ms: float | None = None
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
    isolation: list[str] | None = None  # what held around the submission's sandbox (Sandbox.isolation)
    removed_fatbins: int | None = None  # torch fatbins taken out of the submission's process
    kernels: list[dict] | None = None
    device: str | None = None  # which device graded it ("cuda:1" under xdist worker gw1)
    calls_with_children: int = 0  # timed calls in which child processes ran and ended (grader/checks.py)
    idle_work_ms: float | None = None  # the most CPU the sandbox ran outside its harness between two calls
    contended_rounds: int = 0  # rounds timed again: another context held the GPU (grader/gpu_idle.py)
    gpu_reserved_gib: float | None = None  # the grade's GPU memory reservation when this size ran (grader/gpu_ledger.py)
    gpu_held_gib: float | None = None  # the most the submission's processes held past their start (grader/gpu_memory_wall.py)
    # Timed calls whose outputs (one or more) the grader read from their receipts: copied
    # there by the harness inside the timed call (grader/reading.py ``copied_outputs``),
    # a copy the call's time includes. The submission's, and the expert's of the same rounds.
    outputs_copied: int = 0
    expert_outputs_copied: int = 0
    # Every timed call's three readings, per role: what the medians came from, so a rerun
    # whose median moved can be read call by call (and counted again: nodus-recount).
    timed_calls: dict | None = None
    # --nodus-trusted only: forbidden-kernel findings kept for the record, not scored.
    waived_flags: list[dict] | None = None
    phases: dict = field(default_factory=dict)  # where this size's wall time went, ms (grader/phases.py)
    # Which of a cross-checked reference's paths answered this size's calls ("plain",
    # "tensor_cores"; grader/exact_products.py); None where the reference is not cross-checked.
    reference_paths: list[str] | None = None

    @property
    def timed(self) -> bool:
        return self.kind in ("public", "hidden")

    def public_text(self, detail: str) -> str:
        # Hidden sizes stay hidden: no dims in any message that reaches a report.
        return re.sub(r"\d{2,}", "#", detail) if self.kind == "hidden" else detail

    def flag(self, code: str, detail: str, replace: bool = False) -> None:
        """Record a finding: the first of each code, or the latest with ``replace`` (a worse
        miss of the same kind, so that the flag and the table name the same figure)."""
        detail = self.public_text(detail)[:DETAIL_CHARS]
        same = next((f for f in self.flags if f["code"] == code), None)
        if same is None:
            self.flags.append({"size": self.id, "code": code, "detail": detail})
        elif replace:
            same["detail"] = detail
        self.status = reward.status_of(f["code"] for f in self.flags)

    def waive(self, code: str, detail: str) -> None:
        """Record what ``flag`` would have raised, without scoring it (--nodus-trusted)."""
        waived = {"size": self.id, "code": code, "detail": self.public_text(detail)[:DETAIL_CHARS]}
        self.waived_flags = self.waived_flags or []
        if waived not in self.waived_flags:
            self.waived_flags.append(waived)

    def take_shared(self, shared: SizeResult) -> None:
        """What an attempt's result carries of the work done once for every attempt of a batch
        (the expert's and baselines' calls, the inputs and reference), as its own grade would."""
        for name, ms in shared.phases.items():
            self.phases[name] = self.phases.get(name, 0.0) + ms
        self.expert_error = shared.expert_error
        self.baseline_errors, self.baseline_notes = shared.baseline_errors, shared.baseline_notes
        self.contended_rounds = shared.contended_rounds
        self.expert_outputs_copied = shared.outputs_copied  # the shared record's calls are the expert's
        self.gpu_reserved_gib = shared.gpu_reserved_gib
        self.note_reference(shared.reference_paths or [])

    def note_reference(self, paths: list[str]) -> None:
        if paths:
            self.reference_paths = sorted(set(self.reference_paths or []) | set(paths))

    def note_error(self, error: float, limit: float) -> bool:
        """Keep the worst error seen (relative to its tolerance) over all calls and outputs;
        True if this one is it."""
        if self.error is None or error / limit > self.error / self.tolerance:
            self.error, self.tolerance = error, limit
            return True
        return False

    def as_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["timed"] = self.timed
        if self.kind == "hidden":
            data["dims"] = None
        data["phases"] = {name: round(ms, 1) for name, ms in self.phases.items()}
        for key in ("error", "expert_error"):
            if data[key] is not None and not math.isfinite(data[key]):
                data[key] = None if math.isnan(data[key]) else 1e308
        return data
