"""Wall seconds of grades through ``pytest_nodus.grade``, as a pipeline calls it: the
environment's solution, sealed, RUNS times per variant, the variants alternated so drift hits
them alike. A variant is extra pytest arguments (``+`` for none), e.g. pytest's default
assertion rewriting against the API's ``--assert=plain``:

    python tools/probes/api_grade_time.py rmsnorm --runs 3 --variant=--assert=rewrite --variant=+
"""

import argparse
import time

from pytest_nodus import grade

parser = argparse.ArgumentParser()
parser.add_argument("env")
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--device", default="cpu")
parser.add_argument("--variant", action="append", required=True)
args = parser.parse_args()
walls = {v: [] for v in args.variant}
for _ in range(args.runs):
    for variant in args.variant:
        began = time.perf_counter()
        result = grade(args.env, f"expert/{args.env}/solution.py", sealed="sealed_fixtures", device=args.device,
                       pytest_args=[] if variant == "+" else variant.split())
        walls[variant].append(time.perf_counter() - began)
        print(f"{variant:>20} {result.status:8} {walls[variant][-1]:.2f} s", flush=True)
for variant, seconds in walls.items():
    print(f"{variant:>20} median {sorted(seconds)[len(seconds) // 2]:.2f} s of {len(seconds)}")
