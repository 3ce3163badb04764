"""Every GPU kernel a call launches, with its launch geometry, and the Triton code inductor
generated for a compiled expert: what a hand-written kernel is up against.

    python3 tools/probes/launch_shapes.py ENV --only public-4,hidden-5 [--sealed sealed_fixtures]
        [--kernels expert,solution] [--code]

Per kernel file and size: torch.profiler over one call after a warm-up; per GPU kernel its
duration, grid, block, registers per thread and shared memory (the profiler's trace). With
``--code`` the source inductor generated during the warm-up (``run_and_get_code``).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_env  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402


def launches(env, module, fresh) -> list[dict]:
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        bench_env.call(env, module, fresh)
        torch.cuda.synchronize()
    with tempfile.NamedTemporaryFile(suffix=".json") as trace:
        prof.export_chrome_trace(trace.name)
        events = json.load(open(trace.name))["traceEvents"]
    return [e for e in events if e.get("cat") == "kernel"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--only", required=True)
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--kernels", default="expert,solution")
    parser.add_argument("--code", action="store_true")
    args = parser.parse_args()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    profile = env.profile("cuda")
    known = bench_env.kernel_files(args.env, profile)
    modules = {n: bench_env.load(n, known[n]) for n in args.kernels.split(",")}
    sizes = bench_env.labelled_sizes(env, args.sealed)
    for label in args.only.split(","):
        print(f"{label} {sizes[label]}", flush=True)
        fresh = nodus_inputs.make_inputs(env, sizes[label], 11, torch.device("cuda"))
        for name, module in modules.items():
            if args.code:
                from torch._inductor.utils import run_and_get_code

                _, code = run_and_get_code(lambda: bench_env.call(env, module, fresh))
                for source in code:
                    print(f"  --- {name}: inductor's code ---\n{source}")
            else:
                bench_env.call(env, module, fresh)  # warm-up: compiles
            torch.cuda.synchronize()
            for e in launches(env, module, fresh):
                a = e.get("args", {})
                print(f"  {name:9s} {e.get('dur', 0):8.1f} us grid {a.get('grid')} block {a.get('block')} "
                      f"regs {a.get('registers per thread')} smem {a.get('shared memory')} {e['name'][:70]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
