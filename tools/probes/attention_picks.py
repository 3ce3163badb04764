"""Probe (GPU): where the attention solution's first call at a new size spends its time, and
what its autotuners pick there.

  python3 tools/probes/attention_picks.py [--sealed sealed_fixtures] [--reps 5] [--solution PATH]

Sizes in the order a grade meets them: the public ones, then the hidden ones (with
--sealed), in one process, as the solution's sandbox calls them. Per size: the first call's
wall (compiles, autotuning), each autotuner that tuned a new key there (its compile-and-bench
seconds, the config it kept, every candidate's median ms), the second call's wall, and the
call's median window (bench_env.window_ms). The table at the end sums, per kernel and head
dim, each candidate's slowdown against the best over the sizes it was timed at: the cost of
keeping one config instead of tuning. A probe, not a grade: no sandbox, one input set per size.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_env  # noqa: E402
from env_suites.attention_backward.environment import ENVIRONMENT as ENV  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402

TUNERS = ("_dkdv", "_dq", "_dkdv_ds", "_dq_from_ds")


def config_name(config) -> str:
    k = config.kwargs
    return f"{k.get('BLOCK_M')}x{k.get('BLOCK_N')}w{config.num_warps}s{config.num_stages}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--solution", type=Path, default=ROOT / "expert/attention_backward/solution.py")
    args = parser.parse_args()
    sol = bench_env.load("solution", args.solution)
    tuners = {name: getattr(sol, name) for name in TUNERS if hasattr(getattr(sol, name, None), "cache")}
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    slowdowns = defaultdict(lambda: defaultdict(list))  # (tuner, D) -> config -> [t / best]
    total_first = 0.0
    for label, dims in bench_env.labelled_sizes(ENV, args.sealed).items():
        fresh = nodus_inputs.make_inputs(ENV, dims, 0, torch.device("cuda"))
        known = {name: set(t.cache) for name, t in tuners.items()}
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        bench_env.call(ENV, sol, fresh)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        total_first += first
        t0 = time.perf_counter()
        bench_env.call(ENV, sol, fresh)
        torch.cuda.synchronize()
        second = time.perf_counter() - t0
        windows = []
        for rep in range(args.reps):
            again = nodus_inputs.make_inputs(ENV, dims, 1 + rep, torch.device("cuda"))
            windows.append(bench_env.window_ms(lambda: bench_env.call(ENV, sol, again), flush)[0])
            del again
        dims_text = " ".join(f"{k}={v}" for k, v in dims.items()) if label.startswith("public") else "hidden"
        print(f"{label} ({dims_text}): first call {first:.2f} s, second {second * 1e3:.1f} ms, "
              f"window {statistics.median(windows):.3f} ms", flush=True)
        for name, tuner in tuners.items():
            for key in set(tuner.cache) - known[name]:
                timings = {config_name(c): (t[0] if isinstance(t, list) else t)
                           for c, t in getattr(tuner, "configs_timings", {}).items()}
                best = min(timings.values()) if timings else math.nan
                for c, t in timings.items():
                    slowdowns[name, dims["D"]][c].append(t / best)
                listed = ", ".join(f"{c} {t:.3f}" for c, t in sorted(timings.items(), key=lambda x: x[1]))
                print(f"  {name}: tuned {getattr(tuner, 'bench_time', math.nan):.2f} s, kept "
                      f"{config_name(tuner.cache[key])}; ms: {listed}", flush=True)
        del fresh
    print(f"# first calls summed: {total_first:.1f} s")
    print("# per kernel and D: each candidate's geometric-mean slowdown against each size's best (sizes)")
    for (name, d), per in sorted(slowdowns.items()):
        ranked = sorted(per.items(), key=lambda x: statistics.geometric_mean(x[1]))
        print(f"{name} D={d}: " + ", ".join(f"{c} {statistics.geometric_mean(r):.3f} ({len(r)})" for c, r in ranked))
    return 0


if __name__ == "__main__":
    sys.exit(main())
