"""Probe (GPU): does a kernel's GPU memory grow call after call under the grader's output
heap when it does not in a plain process?

  python3 tools/probes/heap_pool_growth.py [FILE] [--env rmsnorm] [--size public-3] [--calls 30]
      [--sealed sealed_fixtures] [--modes plain,heap]

FILE (default tests/correct/rmsnorm/cuda_graph_per_input.py) is called ``--calls`` times on
fresh inputs, each way in a process of its own:

- ``plain``: as a user's process runs it;
- ``heap``: as the harness calls it: the output heap (sandbox/heap.py's ``OutputHeap`` over
  a region of grader/heap_build.py's size), ``next_call`` before each call (pools renewed
  when they keep growing, autograd's route open), the call inside ``allocating``;
- ``heap+kept``: the same pools kept for every call and autograd's route left open across
  calls, so that torch releases nothing between them: what the heap's docstring says the
  harness avoids;
- ``heap+empty``: ``heap+kept`` with ``torch.cuda.empty_cache()`` after every call.

After each call: what the driver charges the process (NVML, as the GPU memory wall reads
it), the allocator's reserved bytes, the heap's ``cuMemAlloc`` fallbacks so far, and how many
of the call's outputs lie outside the heap (each would be copied inside the window). A
probe, not a grade: no sandbox walls, no timing.
"""

from __future__ import annotations

import argparse
import importlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

GIB = 1 << 30
MODES = ("plain", "heap", "heap+kept", "heap+empty")


def run(mode: str, args) -> None:
    import torch

    import bench_env
    from pytest_nodus.grader import heap_build, nvml
    from pytest_nodus.grader import inputs as nodus_inputs
    from pytest_nodus.sandbox.heap import OutputHeap

    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    dims = bench_env.labelled_sizes(env, args.sealed)[args.size]
    module = bench_env.load("kernel", args.file)
    device = torch.device("cuda", 0)  # indexed, as the sandbox names its device
    torch.empty(1, device=device)
    driver = nvml.open_device(str(torch.cuda.get_device_properties(0).uuid))
    heap = None
    if mode != "plain":
        region = torch.empty(heap_build.heap_bytes(env.contract.call_bytes(dims)), dtype=torch.uint8, device=device)
        heap = OutputHeap(str(heap_build.build()), region, device)
    start = driver.used_bytes().get(os.getpid(), 0) if driver else 0
    for call in range(args.calls):
        fresh = nodus_inputs.make_inputs(env, dims, call, device)
        if heap is None:
            outputs = bench_env.call(env, module, fresh)
        else:
            if mode == "heap" or call == 0:
                heap.next_call()
            with heap.allocating():
                outputs = bench_env.call(env, module, fresh)
        torch.cuda.synchronize()
        # An output outside the heap is copied into its receipt inside the window (heap_build.py).
        outside = sum(not heap.holds(t) for t in outputs if isinstance(t, torch.Tensor)) if heap else 0
        del outputs, fresh
        pooled = ""
        if heap is not None:  # the heap pool's segments by the stream each is kept for
            segments = heap.pool.snapshot(include_traces=False)
            segments = segments.get("segments", segments) if isinstance(segments, dict) else segments
            streams = {seg.get("stream") for seg in segments}
            pooled = f", heap pool {sum(seg.get('total_size', 0) for seg in segments) / GIB:.2f} GiB on {len(streams)} streams"
        if mode == "heap+empty":
            torch.cuda.empty_cache()
        held = (driver.used_bytes().get(os.getpid(), 0) - start) / GIB if driver else float("nan")
        fallbacks = heap.fallbacks() if heap else 0
        print(f"{mode:10s} call {call:2d}: driver +{held:6.2f} GiB, reserved {torch.cuda.memory_reserved() / GIB:6.2f} "
              f"GiB, heap fallbacks {fallbacks}{pooled}, outputs outside the heap {outside}", flush=True)
    if heap is not None:
        heap.rest()
        # At interpreter exit torch destroys the heap's pools and the tensors still in them
        # (the kernel's own cached graphs and buffers) in no set order, and a tensor freed
        # after its pool aborts the process ("invalid device pointer"). The sandbox never
        # exits that way (the grader kills it); the probe leaves without the teardown too.
        sys.stdout.flush()
        os._exit(0)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("file", nargs="?", type=Path, default=ROOT / "tests/correct/rmsnorm/cuda_graph_per_input.py")
    parser.add_argument("--env", default="rmsnorm")
    parser.add_argument("--size", default="public-3")
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--sealed", type=Path, help="to name a hidden size")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--mode", choices=MODES)
    args = parser.parse_args()
    if args.mode:
        run(args.mode, args)
        return 0
    sealed = ["--sealed", str(args.sealed)] if args.sealed else []
    for mode in args.modes.split(","):  # each in a fresh process: one's cached memory never meets another's
        subprocess.run([sys.executable, __file__, str(args.file), "--env", args.env, "--size", args.size,
                        "--calls", str(args.calls), "--mode", mode, *sealed], check=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
