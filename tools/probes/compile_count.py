"""How many Triton binaries a kernel file costs a sealed grade, and how long compiling them
for sm_90a takes on this machine (no GPU needed): the environment's public and hidden GPU
sizes and ``--fuzz`` sizes drawn from its domain as the grader's fuzz draws them, each
launch captured as nodus-sm90 captures it (pytest_nodus/commands/sm90.py). Every binary is
a compile inside some first call of the grade, which the grade waits for.

    PYTHONPATH=.triton-device python tools/probes/compile_count.py rmsnorm \
        old_solution.py expert/rmsnorm/solution.py --fuzz 12 --seeds 1 2

Each kernel file is compiled into an empty Triton cache of its own, so the times are whole
compiles. Use the device image's Triton (docs/gpu.md): another version builds other code.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

from pytest_nodus.commands import sm90
from pytest_nodus.grader.api import installed_environments
from pytest_nodus.grader.environment import load_hidden_sizes
from pytest_nodus.grader.fuzz import size_strategy

REPO = Path(__file__).resolve().parents[2]


def fuzzed(env, count: int, draw_seed: int) -> list[dict]:
    """``count`` sizes drawn from the GPU domain by the grader's strategy, reproducibly."""
    drawn: list[dict] = []

    @seed(draw_seed)
    @settings(max_examples=count, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(size_strategy(env.profile("cuda").domain))
    def draw(dims):
        drawn.append(dict(dims))

    draw()
    return drawn[:count]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env")
    parser.add_argument("kernels", nargs="+", type=Path)
    parser.add_argument("--sealed", type=Path, default=REPO / "sealed_fixtures")
    parser.add_argument("--fuzz", type=int, default=12, help="fuzzed sizes per grade (the card's fuzz_examples)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    args = parser.parse_args(argv)
    import triton

    env = installed_environments()[args.env].load()
    timed = [*env.profile("cuda").sizes, *load_hidden_sizes(args.sealed, env, "cuda")]
    print(f"{args.env}: {len(timed)} timed sizes, {args.fuzz} fuzzed; sm_90a by Triton {triton.__version__}")
    for draw_seed in args.seeds:
        sizes = timed + fuzzed(env, args.fuzz, draw_seed)
        for path in args.kernels:
            module = sm90.load_for_the_gpu(path)
            binaries, timed_binaries = {}, set()
            for i, dims in enumerate(sizes):
                launches, _ = sm90._launches(env, module, dims, {})
                for fn, launch in launches:
                    key = (fn.__name__, repr(launch))
                    binaries.setdefault(key, (fn, launch))
                    if i < len(timed):
                        timed_binaries.add(key)
            with tempfile.TemporaryDirectory() as cache:
                os.environ["TRITON_CACHE_DIR"] = cache
                start = time.perf_counter()
                for fn, launch in binaries.values():
                    sm90.compile_sm90(fn, launch)
                took = time.perf_counter() - start
            print(f"  seed {draw_seed}  {str(path):40s} {len(timed_binaries):3d} binaries at the timed sizes, "
                  f"{len(binaries):3d} with the fuzzed; compiled in {took:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
