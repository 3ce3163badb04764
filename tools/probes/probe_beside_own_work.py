"""Whether the idle probe reads the grader's own kernels on another stream as idle, on the GPU.

    python3 tools/probes/probe_beside_own_work.py

A batch reads its leftover probe beside a call's checks (grader/grading.py ``_charge_probed``):
that is sound only if kernels of the grader's own context, running beside the probe, show no
step over ``gpu_idle.GAP_LIMIT_NS``, while another process's kernels still do. Prints the
probe's largest step (ns) alone, beside this process's compute-bound and memory-bound kernels
on a second stream, and beside another process's kernels (the control: it must show steps).
"""

from __future__ import annotations

import subprocess
import sys
import time

import torch

from pytest_nodus.grader.gpu_idle import GAP_LIMIT_NS, PROBE_NS, IdleProbe

SPIN_OTHER = """
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
print("ready", flush=True)
end = time.time() + 3
while time.time() < end:
    a @ a
torch.cuda.synchronize()
"""


def largest_step(probe: IdleProbe, beside=None) -> int:
    """The probe's largest step, with ``beside`` (a callable queuing work on another stream)
    queued around it."""
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    if beside is not None:
        with torch.cuda.stream(side):
            beside()  # queued first, so the probe starts while it runs
    probe.run()
    if beside is not None:
        with torch.cuda.stream(side):
            beside()
    probe.wait()
    torch.cuda.synchronize()
    return int(probe.largest_gap.item())


def main() -> int:
    probe = IdleProbe(torch.device("cuda"))
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    big = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")

    def matmuls():  # compute-bound: ~10 ms of tensor-core work per product burst
        for _ in range(40):
            a @ a

    def copies():  # memory-bound: 1 GiB read and written per copy
        for _ in range(40):
            big.copy_(big.flip(0))

    rows = [("alone", None), ("beside own matmuls", matmuls), ("beside own copies", copies)]
    print(f"probe {PROBE_NS / 1e6:.1f} ms, limit {GAP_LIMIT_NS} ns")
    for name, work in rows:
        steps = [largest_step(probe, work) for _ in range(5)]
        print(f"{name:28s} largest step ns: {steps}  over the limit: {sum(s > GAP_LIMIT_NS for s in steps)}/5")
    other = subprocess.Popen([sys.executable, "-c", SPIN_OTHER], stdout=subprocess.PIPE, text=True)
    other.stdout.readline()
    time.sleep(0.3)
    steps = [largest_step(probe) for _ in range(5)]
    other.wait()
    print(f"{'beside another process':28s} largest step ns: {steps}  over the limit: "
          f"{sum(s > GAP_LIMIT_NS for s in steps)}/5 (the control: must be over)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
