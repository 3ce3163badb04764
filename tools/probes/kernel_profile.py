"""Where a kernel's time goes, and which of a solution's tile choices is fastest, on the GPU.

    python3 tools/probes/kernel_profile.py ENV --only public-0,hidden-1 [--sealed sealed_fixtures]
        [--kernels expert,solution] [--sweep ATTR --values "EXPR;EXPR;..."]

Profile (always): per kernel file and size, torch.profiler over 3 calls after a warm-up; the
GPU kernels that take the most time, in us per call, so a slow launch shows by name, and the
host's waits on the device (syncs, copies back), each of which exposes the launches after it.
Sweep (``--sweep``): the solution's module attribute ATTR replaced by each Python EXPR in
turn (e.g. ``_config`` by ``lambda device: dict(BLOCK_M=64, ...)``), each timed as
tools/bench_env.py times a kernel; "default" is the file as it is. ``--sweep '*'`` sweeps
variants of several attributes: each value is ``ATTR=EXPR & ATTR=EXPR ...``. ``--set 'ATTR=EXPR
& ...'`` changes the solution before the profile and the sweep (whose "default" it becomes).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_env  # noqa: E402
from pytest_nodus.grader import devices  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402

TOP = 12


def profile(env, name: str, module, dims, seed: int) -> None:
    fresh = nodus_inputs.make_inputs(env, dims, seed, torch.device("cuda"))
    bench_env.call(env, module, fresh)  # warm-up: compiles, plans
    torch.cuda.synchronize()
    activities = [torch.profiler.ProfilerActivity.CPU, torch.profiler.ProfilerActivity.CUDA]
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(3):
            bench_env.call(env, module, fresh)
        torch.cuda.synchronize()
    averages = prof.key_averages()
    # A call that waits on the device (a sync, a copy to the host) leaves the GPU idle while
    # the host launches what follows: its launch time then counts in the call's time.
    waits = {e.key: e.count for e in averages
             if "Synchronize" in e.key or "cudaMemcpy" in e.key and "Async" not in e.key or "DtoH" in e.key}
    events = [e for e in averages if e.device_type == torch.autograd.DeviceType.CUDA]  # kernels, not their callers
    events.sort(key=lambda e: -e.device_time_total)
    total = sum(e.device_time_total for e in events) / 3
    print(f"  {name}: {total:.1f} us of GPU kernels per call; host waits in 3 calls and the closing sync: {waits}")
    for e in events[:TOP]:
        print(f"    {e.device_time_total / 3:10.1f} us  x{e.count // 3:<3d} {e.key[:110]}")


def _assignments(sweep: str, value: str) -> dict:
    """``{ATTR: value}`` for one variant: ``EXPR`` of ``--sweep ATTR``, or with ``--sweep '*'``
    ``ATTR=EXPR & ATTR=EXPR``."""
    if sweep != "*":
        return {sweep: eval(value)}
    pairs = (part.split("=", 1) for part in value.split(" & "))
    return {name.strip(): eval(expr) for name, expr in pairs}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--only", required=True)
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--kernels", default="expert,solution", help="names (expert, solution) or name=path")
    parser.add_argument("--sweep")
    parser.add_argument("--values", default="")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--set", default="", help="ATTR=EXPR & ATTR=EXPR: the solution as profiled and swept")
    args = parser.parse_args()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    prof_ = env.profile("cuda")
    known = bench_env.kernel_files(args.env, prof_)
    paths = dict(item.split("=", 1) if "=" in item else (item, known[item]) for item in args.kernels.split(","))
    modules = {name: bench_env.load(name, Path(path)) for name, path in paths.items()}
    for name, value in (_assignments("*", args.set) if args.set else {}).items():
        setattr(modules["solution"], name, value)
    sizes = bench_env.labelled_sizes(env, args.sealed)
    device = devices.choose("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    for label in args.only.split(","):
        dims = sizes[label]
        print(f"{label} {dims}", flush=True)
        for name, module in modules.items():
            profile(env, name, module, dims, seed=11)
        if args.sweep:
            solution = modules["solution"]
            variants = [("default", {})] + [(v.strip(), _assignments(args.sweep, v)) for v in args.values.split(";")
                                            if v.strip()]
            defaults = {name: getattr(solution, name) for _, assigned in variants for name in assigned}
            base = bench_env.time_size(env, {"expert": modules["expert"]}, dims, args.reps, flush, 21, device)
            for text, assigned in variants:
                for name, value in {**defaults, **assigned}.items():
                    setattr(solution, name, value)
                # Checked against the expert's outputs (not timed again): a fast candidate must also be right.
                got = bench_env.time_size(env, {"solution": solution}, dims, args.reps, flush, 21, device,
                                          expected_from=modules["expert"])
                if got.get("solution") and base.get("expert"):
                    ms, error = got["solution"][0], got["solution"][1]
                    print(f"  sweep {ms:9.3f} ms {base['expert'][0] / ms:6.3f}x  error {error:.2f} of the limit  {text}",
                          flush=True)
            for name, value in defaults.items():
                setattr(solution, name, value)
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
