"""The plain fp32 references against the tensor-core ones (each environment's
``fused_reference``: bf16 operands, exact products, fp32 intermediates in three bf16 pieces),
per size: how far apart they are and what each costs.

    python3 tools/probes/exact_references.py ENV [--sealed sealed_fixtures] [--only public-1,hidden-4] [--cpu]
        [--require 1e-5]

With ``--cpu`` the kernels run in Triton's interpreter.

ENV is chunked_prefill (its reference) or attention_backward (its inputs' forward and its
gradients). Per size (the GPU's public and hidden sizes; ``--cpu``: the CPU profile's on this
machine), on the same inputs: the largest normwise distance over the outputs, the largest
elementwise one, each path's seconds per call (the second of two, synchronised) and its peak
GiB above what was allocated before it. The grader checks the two against each other at
each size's first call too (``exact_products.cross_checked``, limit 1e-5); this shows every
size at once, and what each path costs. ``--require LIMIT`` exits 1 where any size's normwise
distance is past LIMIT.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_nodus.grader.environment import load_hidden_sizes  # noqa: E402

PREFILL = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "cu_seqlens_q", "softmax_scale")
ATTENTION = ("q", "k", "v", "cu_seqlens", "window", "softmax_scale")
GRADIENTS = ("q", "k", "v", "o", "do", "cu_seqlens", "window", "softmax_scale")


def paths(env_name: str, inputs: dict):
    """(plain, exact): callables of no argument, each returning a tuple of fp32 outputs."""
    reference = importlib.import_module(f"env_suites.{env_name}.reference")
    exact = importlib.import_module(f"env_suites.{env_name}.fused_reference")
    if env_name == "chunked_prefill":
        args = [inputs[n] for n in PREFILL]
        return (lambda: (reference.attention(*args),)), (lambda: (exact.attention(*args),))
    forward, backward = [inputs[n] for n in ATTENTION], [inputs[n] for n in GRADIENTS]
    return ((lambda: (*reference.forward(*forward), *reference.backward(*backward))),
            (lambda: (*exact.forward(*forward), *exact.backward(*backward))))


def timed(fn, device: torch.device) -> tuple[tuple, float, float]:
    """(outputs, seconds of the second call, peak GiB above what was allocated before it)."""
    fn()
    cuda = device.type == "cuda"
    if cuda:
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if cuda else 0
    start = time.perf_counter()
    out = fn()
    if cuda:
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    return out, seconds, (torch.cuda.max_memory_allocated() - before) / 2**30 if cuda else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("env", choices=("chunked_prefill", "attention_backward"))
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--require", type=float)
    args = parser.parse_args()
    if args.cpu:
        # Before anything imports the kernel: Triton picks the interpreter as it decorates,
        # and the interpreter needs the sandbox's bf16 fix (sandbox/triton_interpreter.py).
        import os
        os.environ["TRITON_INTERPRET"] = "1"
        from pytest_nodus.sandbox import triton_interpreter
        triton_interpreter.install()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    where = "cpu" if args.cpu else "cuda"
    device = torch.device(where)
    sizes = {f"public-{i}": d for i, d in enumerate(env.profile(where).sizes)}
    if args.sealed:
        sizes.update({f"hidden-{i}": d for i, d in enumerate(load_hidden_sizes(args.sealed, env, where))})
    only = [s for s in args.only.split(",") if s]
    print(f"{args.env}\n{'size':10} {'normwise':>9} {'max abs':>9} {'plain s':>8} {'exact s':>8} {'speed-up':>8} "
          f"{'plain GiB':>9} {'exact GiB':>9}")
    worst = 0.0
    for label, dims in sizes.items():
        if only and label not in only:
            continue
        inputs = env.make_inputs(dims, torch.Generator(device=device).manual_seed(args.seed), device)
        plain_fn, exact_fn = paths(args.env, inputs)
        plain, plain_s, plain_gib = timed(plain_fn, device)
        exact, exact_s, exact_gib = timed(exact_fn, device)
        normwise = max(float((b - a).norm() / a.norm()) for a, b in zip(plain, exact) if a.norm() > 0)
        largest = max(float((b - a).abs().max()) for a, b in zip(plain, exact))
        print(f"{label:10} {normwise:9.2e} {largest:9.2e} {plain_s:8.3f} {exact_s:8.3f} {plain_s / exact_s:8.2f} "
              f"{plain_gib:9.2f} {exact_gib:9.2f}", flush=True)
        del plain, exact, inputs
        worst = max(worst, normwise)
    if args.require is not None and not worst <= args.require:
        print(f"normwise distance {worst:.2e} past --require {args.require:g}")
        sys.exit(1)


if __name__ == "__main__":
    main()
