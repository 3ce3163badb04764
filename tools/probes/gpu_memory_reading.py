"""What the grader can read of a sandbox's GPU memory from outside it (grader/nvml.py): the
driver's bytes per process while a child holds memory, after it frees it, and after a spike
taken and freed between two readings; with the driver's accounting (the process's peak) where
the host keeps it. The child runs plain and in a pid namespace of its own, as a sandbox
does, to show whether NVML names it under the pid the grader knows.

    python3 tools/probes/gpu_memory_reading.py

It also times one reading of the wall (grader/gpu_memory_wall.py): what the grader pays every
20 ms while a call runs, and after each call.
"""

import shutil
import subprocess
import sys
import time

import torch

from pytest_nodus.grader import nvml
from pytest_nodus.grader.gpu_memory_wall import GpuMemoryWall

CHILD = r"""
import sys, torch
def step(name):
    print(name, flush=True); sys.stdin.readline()
torch.empty(1, device="cuda"); torch.cuda.synchronize(); step("context")
a = torch.empty(4 << 30, dtype=torch.uint8, device="cuda"); a.fill_(1); torch.cuda.synchronize(); step("holding 4 GiB")
del a; torch.cuda.empty_cache(); step("freed")
b = torch.empty(8 << 30, dtype=torch.uint8, device="cuda"); b[:1].fill_(1); torch.cuda.synchronize()
del b; torch.cuda.empty_cache(); step("8 GiB taken and freed")
"""


def main() -> int:
    device = nvml.open_device(str(torch.cuda.get_device_properties(0).uuid))
    if device is None:
        print("NVML: not available")
        return 1
    # Only read: the device's settings are left as they are (the wall never changes them).
    print(f"accounting: {'on' if device.accounting_on() else 'off'}")
    runs = [("plain", [])]
    if shutil.which("unshare"):
        # --mount-proc, as the sandboxes run: the namespace sees its own /proc.
        runs.append(("pid namespace", ["unshare", "--pid", "--fork", "--kill-child", "--mount-proc"]))
    for label, prefix in runs:
        child = subprocess.Popen(prefix + [sys.executable, "-c", CHILD], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
        pid = child.pid
        if prefix:  # the python under unshare's fork: unshare's child
            out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
            pid = int(out[0]) if out else pid
        for line in child.stdout:
            used = device.used_bytes()
            peak = device.peak_bytes(pid)
            print(f"{label:14s} {line.strip():22s} pid {pid}: used {used.get(pid, 0) / 2**20:8.0f} MiB, "
                  f"peak {'-' if peak is None else f'{peak / 2**20:.0f} MiB'}; pids NVML names: {sorted(used)}")
            if line.startswith("holding"):  # what one reading of the wall costs the grader
                wall = GpuMemoryWall(device, 2 << 30, pid)
                began = time.perf_counter()
                for _ in range(200):
                    wall.breached()
                print(f"{label:14s} one wall reading: {(time.perf_counter() - began) / 200 * 1e3:.3f} ms "
                      f"(NVML's process list and the sandbox's tree)")
            child.stdin.write("\n"); child.stdin.flush()
        child.wait()
        peak = device.peak_bytes(pid)
        print(f"{label:14s} {'exited':22s} pid {pid}: peak {'-' if peak is None else f'{peak / 2**20:.0f} MiB'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
