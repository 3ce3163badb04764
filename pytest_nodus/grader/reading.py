"""One call as the grader saw it (:class:`Reading`): what :meth:`Sandbox.call
<pytest_nodus.grader.sandbox_process.Sandbox.call>` returns and ``grader/checks.py`` reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_nodus.grader.clock import GraderClock


@dataclass
class Reading:
    """One call as the grader saw it: the sandbox's report (its claims: flags, times) beside
    what only the grader knows (its snapshot of the outputs, its window, the children)."""

    report: dict
    outputs: list  # the grader's snapshot of the outputs; the receipts (poison) when the call never ran
    window_ms: float | None  # the grader's clock; None when the call never reached it
    child_ms: float | None  # CPU time of the sandbox's children that ran in the window (grader/child_time.py)
    children_at_open: list[str]  # the sandbox's children as the window opened, for a flag's detail
    opened_boot_ticks: int  # when the window opened, in /proc's start-time unit
    pid: int
    _clock: GraderClock = field(repr=False)
    # The largest step the window's idle probe saw (ns), when another context held the GPU
    # (grader/gpu_idle.py); 0 when it was the grader's alone, and on the CPU.
    contended_ns: int = 0
    window_parts: tuple | None = None  # (open to go, flag to close) on the grader's stream (ms)
    # The grader's wall time (ms) of the call's requests that run none of the kernel's code:
    # "arm" (CALL to ARMED) and "report" (the window closed to the report); checks.held.
    held_ms: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return bool(self.report.get("ok"))

    def output_spans(self) -> list[tuple[int, int] | None]:
        """Per output (GPU), the arena bytes the snapshot read; [] on the CPU."""
        return self._clock.output_spans()

    def arena_span(self, view) -> tuple[int, int]:
        """Where a view of the arena lies in it, in bytes."""
        start = view.data_ptr() - self._clock.arena.data_ptr()
        return start, start + view.numel() * view.element_size()

    def copied_outputs(self, receipts) -> list[int]:
        """The outputs the grader read from their receipts: the harness copied them there inside
        the timed call (sandbox/outputs.py), the memory the kernel wrote them to being out of
        the grader's reach. On the GPU: outside the output heap (sandbox/heap.py), for one;
        on the CPU: not contiguous, or not a plain tensor (which fails the size anyway)."""
        if self._clock.cuda:
            return [i for i, (span, receipt) in enumerate(zip(self.output_spans(), receipts))
                    if span is not None and span[0] == self.arena_span(receipt)[0]]
        return [i for i, place in enumerate(self._clock.places) if place is None]

    def changed_after_close(self) -> list[int]:
        """Outputs whose bytes changed after the window closed."""
        return self._clock.changed_since_close()
