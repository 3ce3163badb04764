"""Any environment on the GPU, outside the grader: the expert, the solution and the starting
kernel at every timed size, for tuning a solution between grades.

    python3 tools/bench_env.py moe_experts [--sealed sealed_fixtures] [--reps 5]
        [--kernels expert,solution,starting] [--only public-0,hidden-2]

Per size: fresh inputs per repetition (a baseline's ``prepare`` run before the window, as
the grader does), L2 flushed, the grader's pre-call spin, CUDA events
around the call, median over repetitions after one untimed warm-up (compiles and plans).
Each kernel's error is measured against the expert's outputs on the same inputs (normwise,
as a fraction of the environment's tolerance): a quick sanity figure, not the grade's check
against the fp32 reference. Each timed call holds the grader's per-GPU lock, so no grade's
timed call overlaps it; a grade's untimed work (compiles, fuzzed sizes) still can, so
figures worth comparing come from a run alone on the GPU.

This is a benchmark, not a grade: no sandbox, no audit. The grade is the pytest suite.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import statistics
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_nodus.grader import devices  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402
from pytest_nodus.grader.clock import SPIN_CYCLES  # noqa: E402  the grader's own pre-call GPU spin
from pytest_nodus.grader.correctness import check_outputs  # noqa: E402
from pytest_nodus.grader.environment import load_hidden_sizes  # noqa: E402


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def kernel_files(env_name: str, profile) -> dict[str, Path]:
    return {"expert": Path(profile.expert), "solution": ROOT / "expert" / env_name / "solution.py",
            "starting": ROOT / "env_suites" / env_name / "starting_kernel.py"}


def prepared(env, module, fresh: dict) -> list:
    """The kernel's arguments; a baseline's ``prepare`` (its per-call mask or relayout) runs
    here, outside the window, as the grader's harness runs it before its clock."""
    args = [fresh[spec.name] for spec in env.contract.inputs]
    return module.prepare(*args) if hasattr(module, "prepare") else args


def call(env, module, fresh: dict, args: list | None = None):
    result = module.kernel(*(prepared(env, module, fresh) if args is None else args))
    # A lone tensor is one output: list() would unbind it row by row, host work inside the window.
    return [result] if isinstance(result, torch.Tensor) else list(result)


def labelled_sizes(env, sealed: Path | None) -> dict:
    """{"public-0": dims, ..., "hidden-0": dims, ...}: the GPU sizes, hidden ones with ``sealed``."""
    sizes = {f"public-{i}": d for i, d in enumerate(env.profile("cuda").sizes)}
    if sealed:
        sizes.update({f"hidden-{i}": d for i, d in enumerate(load_hidden_sizes(sealed, env, "cuda"))})
    return sizes


def window_ms(fn, flush: torch.Tensor):
    """(ms, fn's result): fn timed by CUDA events with L2 flushed and the grader's spin first,
    so the host's launches queue behind the spin and only the GPU's work is in the window."""
    torch.cuda.synchronize()
    flush.zero_()
    torch.cuda._sleep(SPIN_CYCLES)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    result = fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end), result


def time_size(env, modules: dict, dims, reps: int, flush: torch.Tensor, seed: int, device,
              expected_from=None) -> dict:
    """{kernel: (median ms, worst error against the expert / tolerance, fastest ms, slowest ms)}.
    The errors are against ``expected_from``'s outputs (a module not timed), else the expert's."""
    results = {}
    warm = nodus_inputs.make_inputs(env, dims, seed, torch.device("cuda"))
    source = expected_from if expected_from is not None else modules.get("expert")
    expected = call(env, source, warm) if source is not None else None
    if expected is not None and env.error_scales:  # a floor measured against the terms' size
        expected += list(env.reference(warm))[len(env.contract.outputs):]
    for name, module in modules.items():
        try:
            outputs = call(env, module, warm)  # warm-up: compiles, plans
            worst = 0.0
            if expected is not None:
                for check in check_outputs(outputs, expected, env.contract, env.tolerance,
                                           scales=tuple(env.error_scales)):
                    worst = max(worst, check.error / check.limit)
            del outputs
            times = []
            for rep in range(reps):
                fresh = nodus_inputs.make_inputs(env, dims, seed + 1 + rep, torch.device("cuda"))
                args = prepared(env, module, fresh)
                with devices.exclusive(device):
                    ms, outputs = window_ms(lambda: call(env, module, fresh, args), flush)
                times.append(ms)
                del outputs, fresh
            results[name] = (statistics.median(times), worst, min(times), max(times))
        except Exception as exc:  # noqa: BLE001  one broken kernel must not hide the others' figures
            print(f"  {name}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            results[name] = None
        print(f"  {name}: {results[name]}", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--kernels", default="expert,solution,starting",
                        help="names (expert, solution, starting) or name=path")
    parser.add_argument("--only", help="comma-separated size labels, e.g. hidden-4")
    args = parser.parse_args()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    profile = env.profile("cuda")
    known = kernel_files(args.env, profile)
    paths = dict(item.split("=", 1) if "=" in item else (item, known[item]) for item in args.kernels.split(","))
    modules = {name: load(name, Path(path)) for name, path in paths.items()}
    sizes = [("public", i, d) for i, d in enumerate(profile.sizes)]
    if args.sealed:
        sizes += [("hidden", i, d) for i, d in enumerate(load_hidden_sizes(args.sealed, env, "cuda"))]
    if args.only:
        sizes = [s for s in sizes if f"{s[0]}-{s[1]}" in args.only.split(",")]
    device = devices.choose("cuda")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"# {args.env} on {torch.cuda.get_device_name()}, torch {torch.__version__}", flush=True)
    rows = []
    for kind, index, dims in sizes:
        label = f"{kind}-{index}"
        print(label, dims, flush=True)
        rows.append((label, dims, time_size(env, modules, dims, args.reps, flush, 1000 * index + (kind == "hidden"),
                                            device)))
        torch.cuda.empty_cache()
    names = list(modules)
    print(f"\n{'size':<10} " + " ".join(f"{n + ' ms':>14} {'err':>5}" for n in names)
          + "".join(f" {n + '/expert':>16}" for n in names if n != "expert") + f" {env.cost.unit:>8}")
    speedups = {n: [] for n in names if n != "expert"}
    for label, dims, res in rows:
        cells = [f"{res[n][0]:14.3f} {res[n][1]:5.2f}" if res.get(n) else f"{'-':>14} {'-':>5}" for n in names]
        base = res.get("expert")
        ratios = []
        for n in speedups:
            if base and res.get(n):
                speedups[n].append(base[0] / res[n][0])
                ratios.append(f"{base[0] / res[n][0]:15.3f}x")
            else:
                ratios.append(f"{'-':>16}")
        rate = f"{env.cost.flops(dims) / base[0] / 1e9:8.1f}" if base else f"{'-':>8}"
        print(f"{label:<10} " + " ".join(cells) + " " + " ".join(ratios) + " " + rate)
    for n, values in speedups.items():
        if values:
            geo = statistics.geometric_mean(values)
            print(f"{n}: geometric mean {geo:.3f}x over {len(values)} sizes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
