"""Probe (H200): which tile shape, warp count and pipeline depth suit the split pair of the
attention solution (its dK/dV kernel and its dQ kernel), per timed size, and what skipping the
mask on interior tiles saves.

  python3 tools/probes/attention_tiles.py [--sealed sealed_fixtures] [--only public-0,...] [--reps 5]
                                          [--kernels dkdv,dq]

For every timed size it times the two kernels alone (L2 flushed, CUDA events, median of
--reps on one set of inputs) under every candidate config, compiled first in a pool of
processes so that compilation does not dominate the probe. It also times the solution as
shipped (its autotuner's pick) and the cuDNN expert, and prints, per size: the best config of
each kernel, the interior-tile saving at that config, and the speedup against cuDNN the best
split pair would give. The split pair's autotune lists are chosen from this. A probe, not a
grade: no sandbox, one input set per size.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import multiprocessing
import statistics
import sys
import time
from pathlib import Path

import torch
import triton

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_env  # noqa: E402
from env_suites.attention_backward.environment import ENVIRONMENT as ENV  # noqa: E402
from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402
from pytest_nodus.grader.environment import load_hidden_sizes  # noqa: E402

BLOCKS = {  # (BLOCK_M, BLOCK_N) candidates per kernel and head-dim class
    ("dkdv", "small"): [(32, 128), (64, 128), (32, 64), (64, 64), (128, 128), (128, 64)],
    ("dkdv", "large"): [(16, 64), (32, 64), (32, 32), (16, 128), (64, 64), (32, 128)],
    ("dq", "small"): [(128, 32), (128, 64), (64, 64), (64, 32), (128, 128), (64, 128)],
    ("dq", "large"): [(64, 16), (64, 32), (32, 32), (128, 16), (64, 64), (128, 32)],
}
WARPS, STAGES = (4, 8), {"small": (2, 3), "large": (1, 2)}


def load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def candidates(kernel: str, d: int):
    cls = "small" if d <= 128 else "large"
    return [dict(BLOCK_M=m, BLOCK_N=n, num_warps=w, num_stages=s)
            for (m, n), w, s in itertools.product(BLOCKS[kernel, cls], WARPS, STAGES[cls])]


class Call:
    """The solution's two kernels on one size's tensors, launched with an explicit config."""

    def __init__(self, sol, dims, seed: int):
        self.sol, self.dims = sol, dims
        fresh = nodus_inputs.make_inputs(ENV, dims, seed, torch.device("cuda"))
        self.args = [fresh[s.name] for s in ENV.contract.inputs]
        q, k, v, o, lse, do, cu, _, window, scale = self.args
        t, hq, d = q.shape
        self.t, self.hq, self.hkv = t, hq, k.shape[1]
        self.tables = torch.empty(3, t, dtype=torch.int32, device="cuda")
        sol._document_tables[(cu.numel() - 1,)](cu, self.tables[0], self.tables[1], self.tables[2], BLOCK=1024)
        self.delta = torch.empty(hq, t, dtype=torch.float32, device="cuda")
        sol._delta[(triton.cdiv(t, 64), hq)](o, do, self.delta, t, HQ=hq, D=d, BLOCK=64)
        self.dq, self.dk, self.dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        self.common = dict(HQ=hq, HKV=self.hkv, GROUP=hq // self.hkv, D=d, **sol._classes(t, int(window)))

    def launch(self, kernel: str, config: dict, every_tile: bool = False, warmup: bool = False):
        q, k, v, o, lse, do, cu, _, window, scale = self.args
        scale = float(scale)
        kw = dict(self.common, MASK_EVERY_TILE=every_tile, **config)
        if kernel == "dkdv":
            fn, grid = self.sol._dkdv_tiles, (triton.cdiv(self.t, config["BLOCK_N"]), self.hkv)
            args = (q, k, v, do, lse, self.delta, self.tables[0], self.tables[1], self.tables[2], self.dk, self.dv,
                    self.delta, self.t, window, scale, scale * self.sol.LOG2E, 0, 1, 1)
        else:
            fn, grid = self.sol._dq.fn, (triton.cdiv(self.t, config["BLOCK_M"]), self.hq)
            args = (q, k, v, do, lse, self.delta, self.tables[0], self.tables[1], self.dq, self.t, window,
                    scale, scale * self.sol.LOG2E)
        if warmup:
            fn.warmup(*args, grid=grid, **kw)
            return
        fn[grid](*args, **kw)


def _compile(task) -> str | None:
    """Pool worker: compile one (size, kernel, config) into Triton's cache."""
    dims, kernel, config, every_tile = task
    sol = load("solution", ROOT / "expert/attention_backward/solution.py")
    try:
        Call(sol, dims, seed=0).launch(kernel, config, every_tile, warmup=True)
        return None
    except Exception as exc:  # noqa: BLE001  a config that does not fit is a finding, not a crash
        return f"{type(exc).__name__}: {str(exc)[:120]}"


def timed(fn, reps: int, flush: torch.Tensor) -> float:
    """Median ms of ``fn``'s GPU work, timed as the grader's window is (bench_env.window_ms)."""
    fn()
    return statistics.median(bench_env.window_ms(fn, flush)[0] for _ in range(reps))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--only")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--workers", type=int, default=12)
    parser.add_argument("--kernels", default="dkdv,dq")
    args = parser.parse_args()
    kernels = args.kernels.split(",")
    sizes = [(f"public-{i}", d) for i, d in enumerate(ENV.profile("cuda").sizes)]
    if args.sealed:
        sizes += [(f"hidden-{i}", d) for i, d in enumerate(load_hidden_sizes(args.sealed, ENV, "cuda"))]
    if args.only:
        sizes = [s for s in sizes if s[0] in args.only.split(",")]
    tasks = [(dims, kernel, config, False) for _, dims in sizes for kernel in kernels
             for config in candidates(kernel, dims["D"])]
    t0 = time.perf_counter()
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        failures = dict(zip(((str(t[0]), t[1], str(t[2])) for t in tasks), pool.map(_compile, tasks, chunksize=1)))
    print(f"# compiled {len(tasks)} configs in {time.perf_counter() - t0:.0f} s; "
          f"{sum(f is not None for f in failures.values())} did not compile", flush=True)
    sol = load("solution", ROOT / "expert/attention_backward/solution.py")
    cudnn = load("cudnn", ROOT / "expert/attention_backward/expert_cuda.py")
    flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    rows = []
    for label, dims in sizes:
        call = Call(sol, dims, seed=1)
        cudnn_ms = timed(lambda: cudnn.kernel(*call.args), args.reps, flush)
        shipped_ms = timed(lambda: sol.kernel(*call.args), args.reps, flush)
        picked = {name: str(getattr(getattr(sol, f"_{name}"), "best_config", "?")) for name in ("dkdv", "dq")}
        best = {}
        for kernel in kernels:
            results = []
            for config in candidates(kernel, dims["D"]):
                if failures[str(dims), kernel, str(config)]:
                    continue
                try:
                    ms = timed(lambda: call.launch(kernel, config), args.reps, flush)
                except Exception as exc:  # noqa: BLE001
                    print(f"{label} {kernel} {config}: {type(exc).__name__}", flush=True)
                    continue
                results.append((ms, config))
                print(f"{label} {kernel} {config} {ms:.3f} ms", flush=True)
            if not results:
                continue
            ms, config = min(results, key=lambda r: r[0])
            every_ms = timed(lambda: call.launch(kernel, config, every_tile=True), args.reps, flush)
            best[kernel] = (ms, config, every_ms)
        rows.append((label, dims, cudnn_ms, shipped_ms, picked, best))
        del call
        torch.cuda.empty_cache()
    print("\nPer kernel: best ms [BLOCK_M BLOCK_N warps stages], then ms with every tile masked. "
          "split = best dkdv + best dq.")
    print(f"{'size':<9} {'D':<3} {'Hq/Hkv':<6} {'W':<5} {'cuDNN ms':>8} {'shipped':>8} {'(x)':>5}   "
          + "   ".join(f"{k:<32}" for k in kernels) + "   split x")
    for label, dims, cudnn_ms, shipped_ms, picked, best in rows:
        cells = []
        for kernel in kernels:
            if kernel not in best:
                cells.append(f"{'none compiled':<32}")
                continue
            ms, c, every = best[kernel]
            cells.append(f"{ms:8.3f} [{c['BLOCK_M']} {c['BLOCK_N']} {c['num_warps']} {c['num_stages']}] {every:8.3f}".ljust(32))
        split = f"{cudnn_ms / (best['dkdv'][0] + best['dq'][0]):7.3f}" if {"dkdv", "dq"} <= best.keys() else "      -"
        print(f"{label:<9} {dims['D']:<3} {dims['Hq']:>2}/{dims['Hkv']:<3} {dims['W']:<5} {cudnn_ms:8.3f} "
              f"{shipped_ms:8.3f} {cudnn_ms / shipped_ms:5.3f}   " + "   ".join(cells) + f"   {split}")
    print("autotuner's picks as shipped: " + "; ".join(f"{r[0]} {r[4]}" for r in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
