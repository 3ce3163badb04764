"""attention_backward on the GPU, outside the grader: every kernel at every timed size.

    python3 tools/bench_attention.py [--sealed sealed_fixtures] [--reps 10] [--kernels a,b,...] [--only hidden-4,...]

For each public (and, with --sealed, hidden) size: fresh inputs per repetition, L2 flushed,
CUDA events around the call, median over repetitions; each kernel's worst error against
the fp32 reference, as a fraction of the tolerance. Kernels: the cuDNN expert, the
FlexAttention backward (its forward run untimed first, as the grader's baseline does),
the solution and the starting kernel. Also checks that the cuDNN expert writes nothing
past the end of its outputs (sentinels after dq, dk, dv). Prints one table, last.

This is a benchmark, not a grade: no sandbox, no audit. The grade is the pytest suite.
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from env_suites.attention_backward.environment import ENVIRONMENT as ENV  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402
from pytest_nodus.grader.correctness import check_outputs  # noqa: E402
from pytest_nodus.grader.environment import load_hidden_sizes  # noqa: E402
from pytest_nodus.grader.clock import SPIN_CYCLES  # noqa: E402  the grader's own pre-call GPU spin

KERNELS = {
    "cudnn": ROOT / "expert/attention_backward/expert_cuda.py",
    "flex": ROOT / "expert/attention_backward/flex_attention_backward.py",
    "solution": ROOT / "expert/attention_backward/solution.py",
    "starting": ROOT / "env_suites/attention_backward/starting_kernel.py",
}


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def arguments(fresh: dict) -> list:
    return [fresh[spec.name] for spec in ENV.contract.inputs]


def time_kernel(module, dims, reps: int, flush: torch.Tensor, seed: int):
    """(median ms, worst error / tolerance, first call s) over ``reps`` timed calls after one
    warm-up; the first call's wall time (prepare included) is where compilation shows."""
    times, worst, first_s = [], 0.0, None
    for rep in range(reps + 1):
        began = time.perf_counter()
        fresh = nodus_inputs.make_inputs(ENV, dims, seed + rep, torch.device("cuda"))
        args = arguments(fresh)
        if hasattr(module, "prepare"):
            args = module.prepare(*args)
        torch.cuda.synchronize()
        flush.zero_()
        torch.cuda._sleep(SPIN_CYCLES)
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        outputs = module.kernel(*args)
        end.record()
        torch.cuda.synchronize()
        if rep:
            times.append(start.elapsed_time(end))
        else:
            first_s = time.perf_counter() - began
        references = ENV.reference(fresh)
        for check in check_outputs(list(outputs), references, ENV.contract, ENV.tolerance):
            worst = max(worst, check.error / check.limit)
    return statistics.median(times), worst, first_s


def cudnn_writes_past_outputs(module, dims, seed: int) -> bool:
    """Run the expert's graph on outputs followed by sentinel rows; True if any changed."""
    fresh = nodus_inputs.make_inputs(ENV, dims, seed, torch.device("cuda"))
    q, k, v, o, lse, do, cu, max_seqlen, window, scale = arguments(fresh)
    t, hq, d = q.shape
    slack = 256
    buffers = [torch.full((t + slack, *x.shape[1:]), 7.0, dtype=x.dtype, device=x.device) for x in (q, k, v)]
    module.kernel(*arguments(fresh))  # builds the plans
    plan = next(p for p in module._plans[(t, hq, k.shape[1], d, cu.numel() - 1, window, float(scale))]
                if p.capacity >= max_seqlen)
    plan.run(q, k, v, o, lse, do, cu, *(b[:t] for b in buffers))
    torch.cuda.synchronize()
    return any(bool((b[t:] != 7.0).any()) for b in buffers)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--kernels", default=",".join(KERNELS))
    parser.add_argument("--only", help="comma-separated size labels, e.g. hidden-4")
    args = parser.parse_args()
    names = args.kernels.split(",")
    modules = {n: load(n, KERNELS[n]) for n in names}
    sizes = [("public", i, d) for i, d in enumerate(ENV.profile("cuda").sizes)]
    if args.sealed:
        sizes += [("hidden", i, d) for i, d in enumerate(load_hidden_sizes(args.sealed, ENV, "cuda"))]
    if args.only:
        sizes = [s for s in sizes if f"{s[0]}-{s[1]}" in args.only.split(",")]
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    rows = []
    for kind, index, dims in sizes:
        label = f"{kind}-{index}"
        row = {"size": label, "dims": "x".join(f"{k}{v}" for k, v in dims.items())}
        for name, module in modules.items():
            try:
                row[name] = time_kernel(module, dims, args.reps, flush, seed=1000 * index + (kind == "hidden"))
            except Exception as exc:  # noqa: BLE001  one broken kernel must not hide the others' figures
                row[name] = None
                print(f"{label} {name}: {type(exc).__name__}: {str(exc)[:300]}", flush=True)
            print(label, name, row[name], flush=True)
        if "cudnn" in modules and row.get("cudnn"):
            try:
                row["oob"] = cudnn_writes_past_outputs(modules["cudnn"], dims, seed=7)
            except Exception as exc:  # noqa: BLE001
                row["oob"] = f"{type(exc).__name__}"
        row["tflop"] = ENV.cost.flops(dims) / 1e12
        rows.append(row)
    print("\nsize       dims                               " + " ".join(f"{n + ' ms':>12} {'err':>5}" for n in names)
          + "  cuDNN TF/s  sol TF/s  sol/cuDNN  flex/cuDNN  cuDNN oob")
    for row in rows:
        cells = []
        for n in names:
            ms, err, _ = row.get(n) or (None, None, None)
            cells.append(f"{ms:12.3f} {err:5.2f}" if ms is not None else f"{'-':>12} {'-':>5}")
        cudnn = row["cudnn"][0] if row.get("cudnn") else None
        sol = row["solution"][0] if row.get("solution") else None
        flex = row["flex"][0] if row.get("flex") else None
        extra = (f"{row['tflop'] / cudnn * 1e3:11.1f}" if cudnn else f"{'-':>11}") + \
                (f"{row['tflop'] / sol * 1e3:10.1f}" if sol else f"{'-':>10}") + \
                (f"{cudnn / sol:10.3f}x" if cudnn and sol else f"{'-':>11}") + \
                (f"{cudnn / flex:11.3f}x" if cudnn and flex else f"{'-':>12}") + f"  {row.get('oob', '-')}"
        print(f"{row['size']:<10} {row['dims']:<34} " + " ".join(cells) + extra)
    print("first call, s (compilation, plan building, prepare): " + "; ".join(
        f"{row['size']} " + " ".join(f"{n} {row[n][2]:.1f}" for n in names if row.get(n)) for row in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
