"""A submission's GPU memory held to its task card's budget, by the driver's count, read outside it.

Threat: a kernel that takes more GPU memory than the card publishes (a dense fp32 score matrix,
a hoard kept across calls) makes the grades sharing its GPU run out: a batch-mate's correct
kernel then raises, or the grader's own allocations wait (``gpu_memory``). Nothing inside the
sandbox can be trusted to stop it: torch's per-process fraction and its allocator are the
submission's to change, and ``cudaMalloc`` bypasses both.

The wall: the driver charges every allocation to the process that made it, and NVML reads that
charge from the grader (``grader/nvml.py``). The grader reads it for every process of the
sandbox (its own, any it started, anything in its cgroup) every :data:`READ_EVERY_S` while it
waits on the sandbox, and after each of its calls, once the sandbox rests and before anything
else runs (a batch-mate's call, the expert's), and kills the sandbox once they hold more than
they held when it became ready plus the card's budget plus :data:`ALLOWANCE_BYTES`:
``over_limit``, -24. What the sandbox held when ready (its context, the arena it maps) is the
grader's doing; inputs, outputs and the calls' own allocations live in the grader's arena and
heap and are charged to the grader.

What it does not see: memory taken and freed within a call between two readings (at most
:data:`READ_EVERY_S` apart), unless the host keeps the driver's accounting
(``nvidia-smi -am 1``: an operator's choice, never the grader's), whose per-process peak the
wall then reads instead. Runs only in the grader.
"""

from __future__ import annotations

from pytest_nodus.grader import nvml
from pytest_nodus.grader.gpu_ledger import CONTEXT_BYTES, GIB
from pytest_nodus.grader.processes import descendants

LABEL = "gpu-memory-limit"
# Beyond the budget: kernel modules the driver loads lazily after the sandbox is ready (torch's
# own and the submission's) and library handles and workspaces (cuBLAS, cuDNN). The ledger's
# figure for a process's context and code (gpu_ledger.CONTEXT_BYTES); counted from the
# sandbox's start, its context already held, it allows that context more than the ledger
# reserves: docs/gpu_memory_wall.md gives the figure and what settles the two.
ALLOWANCE_BYTES = CONTEXT_BYTES
# How often a running call's memory is read: the grader is only waiting then, and the other
# sandboxes are frozen, so memory a call takes and frees within this harms no one but other
# grades on the GPU. Held past the call, it is read before anything else runs.
READ_EVERY_S = 0.02


class GpuMemoryWall:
    """One sandbox's processes against its budget: a submission's, or the expert's where its
    environment declares the expert's measured memory (there a breach is ``expert_failed``)."""

    def __init__(self, device: nvml.Device, budget_bytes: int, pid: int, cgroup_tasks=None, used=None):
        self._device, self._pid, self._cgroup_tasks = device, pid, cgroup_tasks
        self.limit_bytes = budget_bytes + ALLOWANCE_BYTES
        self.peaks = device.accounting_on()  # read once: the operator sets it, never the grader
        self.at_ready = self.held(used)
        self.most_bytes = 0  # the most held beyond at_ready in any reading: the grade's gpu_held_gib

    @classmethod
    def raise_for(cls, torch_device: str, budget_bytes: int | None, pid: int, cgroup=None) -> GpuMemoryWall | None:
        """The wall for a sandbox on ``torch_device``, or None where it cannot stand
        (a CPU grade, no budget, no NVML on the host, or an NVML that does not name the sandbox,
        which holds a device context by now: a container whose pids are not the driver's would
        read every sandbox as holding nothing, a wall in name only)."""
        if budget_bytes is None or not torch_device.startswith("cuda"):
            return None
        import torch

        index = torch.device(torch_device).index or 0
        device = nvml.open_device(str(torch.cuda.get_device_properties(index).uuid))
        if device is None:
            return None
        try:
            used = device.used_bytes()
            if pid not in used:
                return None
            return cls(device, budget_bytes, pid, cgroup.tasks if cgroup is not None else None, used)
        except OSError:  # NVML answers no process list here: no wall, and isolation says so
            return None

    def _own(self, pids) -> set[int]:
        """Of the pids the driver names, the sandbox's: itself, its descendants, and any task
        of its cgroup (a process that left its tree by a double fork is still there)."""
        own = {self._pid} | descendants(self._pid)
        if self._cgroup_tasks is not None:
            own |= set(self._cgroup_tasks())
        return own & set(pids)

    def held(self, used: dict | None = None) -> int:
        """Bytes the sandbox's processes hold now (``used``: NVML's list, read already), or at
        their peak where the driver keeps it."""
        used = self._device.used_bytes() if used is None else used
        own = self._own(used)
        if self.peaks:
            peaks = [self._device.peak_bytes(pid) for pid in own]
            return sum(peak if peak is not None else used[pid] for pid, peak in zip(own, peaks))
        return sum(used[pid] for pid in own)

    def breached(self) -> str | None:
        """Why the sandbox is past its budget, or None. A reading NVML fails is skipped: the
        sandbox cannot make the grader's query fail, and an honest kernel must never pay for a
        driver's hiccup; the next reading decides."""
        try:
            held = self.held()
        except OSError:
            return None
        self.most_bytes = max(self.most_bytes, held - self.at_ready)
        if held - self.at_ready <= self.limit_bytes:
            return None
        return (f"its processes held {held / GIB:.2f} GiB of GPU memory, {(held - self.at_ready) / GIB:.2f} GiB "
                f"more than at its start, past the task card's budget and {ALLOWANCE_BYTES / GIB:g} GiB for "
                f"code and library workspaces ({self.limit_bytes / GIB:.2f} GiB)")


__all__ = ["GpuMemoryWall", "LABEL"]
