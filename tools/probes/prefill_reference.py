"""chunked_prefill's two fp32 references side by side: the plain one (fp32 FMA products) and
``exact_pieces`` (bf16 operands, exact products, fp32 sums over key blocks), per size: how far
apart they are and what each costs.

    python3 tools/probes/prefill_reference.py [--sealed sealed_fixtures] [--only public-1,hidden-4] [--cpu]

Per size (the GPU's public and hidden sizes; ``--cpu``: the CPU profile's on this machine):
the normwise and the largest elementwise distance between the two outputs on the same
inputs, each reference's seconds per call (the second of two calls, synchronised) and its
peak memory above the inputs. ``exact_pieces.ON_CUDA`` is turned on only where the distance
is at fp32 rounding (about 1e-6 normwise, against the environment's 6e-3 tolerance) at every
size.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from env_suites.chunked_prefill import exact_pieces, reference  # noqa: E402
from env_suites.chunked_prefill.environment import ENVIRONMENT  # noqa: E402
from pytest_nodus.grader.environment import load_hidden_sizes  # noqa: E402

NAMES = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "cu_seqlens_q", "softmax_scale")


def timed(fn, args, device: torch.device) -> tuple[torch.Tensor, float, float]:
    """(output, seconds of the second call, peak GiB above what was allocated before it)."""
    fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    before = torch.cuda.memory_allocated() if device.type == "cuda" else 0
    start = time.perf_counter()
    out = fn(*args)
    if device.type == "cuda":
        torch.cuda.synchronize()
    seconds = time.perf_counter() - start
    peak = (torch.cuda.max_memory_allocated() - before) / 2**30 if device.type == "cuda" else float("nan")
    return out, seconds, peak


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--only", default="")
    parser.add_argument("--cpu", action="store_true")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    where = "cpu" if args.cpu else "cuda"
    device = torch.device(where)
    sizes = {f"public-{i}": d for i, d in enumerate(ENVIRONMENT.profile(where).sizes)}
    if args.sealed:
        sizes.update({f"hidden-{i}": d for i, d in enumerate(load_hidden_sizes(args.sealed, ENVIRONMENT, where))})
    only = [s for s in args.only.split(",") if s]
    print(f"{'size':10} {'normwise':>9} {'max abs':>9} {'plain s':>8} {'pieces s':>8} {'speed-up':>8} "
          f"{'plain GiB':>9} {'pieces GiB':>10}")
    for label, dims in sizes.items():
        if only and label not in only:
            continue
        generator = torch.Generator(device=device).manual_seed(args.seed)
        inputs = reference.make_inputs(dims, generator, device)
        call = [inputs[n] for n in NAMES]
        plain, plain_s, plain_gib = timed(reference.attention, call, device)
        pieces, pieces_s, pieces_gib = timed(exact_pieces.attention, call, device)
        normwise = float((pieces - plain).norm() / plain.norm())
        largest = float((pieces - plain).abs().max())
        print(f"{label:10} {normwise:9.2e} {largest:9.2e} {plain_s:8.3f} {pieces_s:8.3f} {plain_s / pieces_s:8.2f} "
              f"{plain_gib:9.2f} {pieces_gib:10.2f}", flush=True)
        del plain, pieces, inputs, call


if __name__ == "__main__":
    main()
