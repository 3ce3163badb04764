"""Whether a kernel's timed call is GPU work or a gap the host leaves, on the GPU.

    python3 tools/probes/host_gap.py ENV LABEL [--sealed sealed_fixtures] [--kernels solution,expert] [--seeds 6]

Per fresh-input call (seeds 1..N, as tools/bench_env.py draws them), with Python's cyclic
garbage collector on and then off (collected before the spin): the host's time to enqueue
the call (no sync inside the window) and the CUDA-event time of the call after the grader's
pre-call spin (what a grade measures). An event time that follows the host time, with host
time above the spin's ~4 ms, means the GPU waited on the host. ``--cprofile`` says where
that host time went.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import importlib
import pstats
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_env  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402
from pytest_nodus.grader.clock import SPIN_CYCLES  # noqa: E402


def one_call(env, module, fresh, flush, gc_off: bool, profiler) -> tuple[float, float]:
    """(host ms to enqueue the call, event ms of the call)."""
    torch.cuda.synchronize()
    if gc_off:
        gc.collect()
        gc.disable()
    flush.zero_()
    torch.cuda._sleep(SPIN_CYCLES)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    if profiler is not None:
        profiler.enable()
    t0 = time.perf_counter()
    outputs = bench_env.call(env, module, fresh)
    host_ms = 1e3 * (time.perf_counter() - t0)
    if profiler is not None:
        profiler.disable()
    end.record()
    torch.cuda.synchronize()
    gc.enable()
    del outputs
    return host_ms, start.elapsed_time(end)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("label")
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--kernels", default="solution,expert")
    parser.add_argument("--seeds", type=int, default=6)
    parser.add_argument("--gc", choices=("on", "off", "both"), default="both")
    parser.add_argument("--cprofile", action="store_true", help="the host's functions over every call, by own time")
    args = parser.parse_args()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    profile = env.profile("cuda")
    sizes = bench_env.labelled_sizes(env, args.sealed)
    dims = sizes[args.label]
    known = bench_env.kernel_files(args.env, profile)
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"{args.label} {dims}")
    for name in args.kernels.split(","):
        module = bench_env.load(name, known[name])
        bench_env.call(env, module, nodus_inputs.make_inputs(env, dims, 0, torch.device("cuda")))  # compiles
        profiler = cProfile.Profile() if args.cprofile else None
        for gc_mode in (("on", "off") if args.gc == "both" else (args.gc,)):
            for seed in range(1, args.seeds + 1):
                fresh = nodus_inputs.make_inputs(env, dims, seed, torch.device("cuda"))
                host, event = one_call(env, module, fresh, flush, gc_mode == "off", profiler)
                print(f"  {name:<9} gc {gc_mode:<3} seed {seed}: host {host:7.3f} ms  event {event:7.3f} ms")
                del fresh
        if profiler is not None:
            pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
