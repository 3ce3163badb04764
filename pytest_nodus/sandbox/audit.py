"""The kernel audit: every op and kernel that ran since the last ``finish``, on every stream.

The profiler runs all the time, across calls (started again right after each audit), so
audited calls cannot be told from others, and its start-up cost falls on a size's first
call, a warm-up call: started around each call it cost ~0.5 ms per call on the H200,
inside the timed region. It is torch's autograd profiler with Kineto, not its
``torch.profiler.profile`` wrapper: the wrapper's start asks ``hasattr(torch, "_inductor")``,
which imports inductor and dynamo (seconds of every sandbox's start-up) to read one
setting the audit does not use. It runs in the submission's process and its report is a claim
(``docs/sealing.md``, "What is not sealed"); environments that forbid library kernels keep
them out of the process by other means as well (``grader/keepout.py``).
"""

from __future__ import annotations

import torch

MAX_AUDIT_NAMES = 64


class KernelAudit:
    def __init__(self, enabled: bool, device: torch.device):
        self.enabled = enabled
        self.device = device
        self._profiler = self._start()

    def restart(self) -> dict | None:
        """Stop, report what ran, and start again."""
        report = self._stop(self._profiler)
        self._profiler = self._start()
        return report

    def close(self) -> None:
        """Stop the profiler before the process exits: one still running as the interpreter
        shuts down crashes it (SIGSEGV in the profiler's teardown)."""
        if self._profiler is not None:
            self._profiler.__exit__(None, None, None)
            self._profiler = None

    def _start(self):
        if not self.enabled:
            return None
        from torch.autograd.profiler import profile

        profiler = profile(use_cpu=True, use_device="cuda" if self.device.type == "cuda" else None, use_kineto=True)
        profiler.__enter__()
        return profiler

    @staticmethod
    def _stop(profiler) -> dict | None:
        if profiler is None:
            return None
        profiler.__exit__(None, None, None)
        ops, kernels = set(), {}
        try:
            events = profiler.kineto_results.events()
        except Exception:  # noqa: BLE001  an audit failure must not look like a kernel failure
            return {"ops": [], "kernels": [], "error": "profiler returned no events"}
        for event in events:
            name = event.name()
            if event.device_type() == torch.autograd.DeviceType.CUDA:
                key = (name[:160], int(event.device_resource_id()))
                kernels[key] = kernels.get(key, 0.0) + event.duration_ns() / 1e3
            else:
                ops.add(name[:160])
        ranked = sorted(kernels.items(), key=lambda kv: -kv[1])[:MAX_AUDIT_NAMES]
        return {"ops": sorted(ops)[:4 * MAX_AUDIT_NAMES],
                "kernels": [{"name": n, "stream": s, "us": round(us, 3)} for (n, s), us in ranked]}
