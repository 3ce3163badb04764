"""Probe: the most memory a kernel file's call holds at once, per size, beyond its inputs.

  python3 tools/probes/call_memory.py ENV FILE [--sealed sealed_fixtures] [--dims '{"T": 65536}'] [--cuda]

Sizes: ENV's GPU sizes (public, hidden with --sealed) and each --dims (public-0 with those
dims replaced: a corner of the domain, which the fuzz may draw).

Without --cuda (no GPU needed): counted on meta tensors, so that sizes far past this
machine's memory can be asked. The peak of every tensor an operator returned (views not
counted twice) from its making until it was freed, through a TorchDispatchMode, outputs
included; and what of it lies past the sandbox's heap (grader/heap_build.py), which the GPU
memory wall charges a sandbox with (docs/gpu_memory_wall.md). The CUDA caching allocator's
rounding, library workspaces and a compiled graph's buffers are not in it, and only eager
torch operators run on meta tensors (not Triton or CUDA kernels). Inputs are made on the CPU
by the environment and moved to meta: a figure that depends on values (routing) is the meta
kernels' assumption, not the data's.

With --cuda: the first call (an expert's compiles and choices) and a second, each with the
allocator's peak reset, read as torch.cuda.max_memory_reserved past what the inputs
reserved. No heap here: every allocation is the caching allocator's, so this bounds from
above what the wall charges the same file in a sandbox.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import weakref
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import bench_env  # noqa: E402
from pytest_nodus.grader.heap_build import heap_bytes  # noqa: E402

GIB = 1 << 30


class LiveBytes(TorchDispatchMode):
    """Bytes of the tensors operators return, counted until each is freed; the peak kept."""

    def __init__(self):
        super().__init__()
        self.live = self.peak = 0

    def _freed(self, nbytes: int) -> None:
        self.live -= nbytes

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t._base is None:
                nbytes = t.untyped_storage().nbytes()
                self.live += nbytes
                self.peak = max(self.peak, self.live)
                weakref.finalize(t, self._freed, nbytes)
        return out


def on_cuda(env, module, dims) -> tuple[int, int]:
    """(first call's, second call's) peak reserved bytes past the inputs', the cache emptied first."""
    device = torch.device("cuda")
    fresh = env.make_inputs(dims, torch.Generator(device=device).manual_seed(0), device)
    peaks = []
    for _ in range(2):
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        base = torch.cuda.memory_reserved()
        torch.cuda.reset_peak_memory_stats()
        outputs = bench_env.call(env, module, fresh)
        torch.cuda.synchronize()
        peaks.append(torch.cuda.max_memory_reserved() - base)
        del outputs
    del fresh
    torch.cuda.empty_cache()
    return peaks[0], peaks[1]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("file", type=Path)
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--dims", action="append", default=[], help="JSON: public-0's dims with these replaced")
    parser.add_argument("--cuda", action="store_true", help="read the CUDA allocator instead of counting on meta")
    args = parser.parse_args()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    module = bench_env.load("kernel", args.file)
    sizes = bench_env.labelled_sizes(env, args.sealed)
    for i, extra in enumerate(args.dims):
        sizes[f"corner-{i}"] = {**env.profile("cuda").sizes[0], **json.loads(extra)}
    if args.cuda:
        print(f"{'size':10s} {'first call GiB':>15s} {'second':>7s}  dims")
    else:
        print(f"{'size':10s} {'peak GiB':>9s} {'outputs':>8s} {'heap':>6s} {'past heap':>10s}  dims")
    for label, dims in sizes.items():
        shown = dims if not label.startswith("hidden") else "hidden"
        if args.cuda:
            first, second = on_cuda(env, module, dims)
            print(f"{label:10s} {first / GIB:15.2f} {second / GIB:7.2f}  {shown}", flush=True)
            continue
        fresh = env.make_inputs(dims, torch.Generator().manual_seed(0), torch.device("cpu"))
        meta = {k: v.to("meta") if isinstance(v, torch.Tensor) else v for k, v in fresh.items()}
        del fresh
        counter = LiveBytes()
        with counter:
            outputs = bench_env.call(env, module, meta)
        out_bytes = sum(t.untyped_storage().nbytes() for t in outputs if isinstance(t, torch.Tensor))
        heap = heap_bytes(env.contract.call_bytes(dims))
        print(f"{label:10s} {counter.peak / GIB:9.2f} {out_bytes / GIB:8.2f} {heap / GIB:6.2f} "
              f"{max(0, counter.peak - heap) / GIB:10.2f}  {shown}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
