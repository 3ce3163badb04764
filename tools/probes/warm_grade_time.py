"""Wall seconds of back-to-back grades through ``pytest_nodus.grade`` (a fresh pytest process
each) against ``pytest_nodus.WarmGrader`` (each forked from a warm process, its sandboxes
spawned ahead), as a pipeline grades attempt after attempt on one host. The environment's
solution, sealed; the two alternate, RUNS pairs, after one fresh grade that warms the host's
caches and the warm grader's first grade, which waits for its own start (neither counted). Each line: the caller's wall, the grade's own wall_s and its
startup and sandbox starts (phases), the status and speedup, which must agree, then the
grade's whole ``time (s):`` line; --json-dir keeps every grade's JSON.

    python tools/probes/warm_grade_time.py rmsnorm --runs 3 --device cpu
"""

import argparse
import importlib.metadata
import json
import statistics
import time
from pathlib import Path

from pytest_nodus import WarmGrader, grade
from pytest_nodus.grader import phases

parser = argparse.ArgumentParser()
parser.add_argument("env")
parser.add_argument("--runs", type=int, default=3)
parser.add_argument("--device", default="cpu")
parser.add_argument("--submission", default=None, help="default: expert/<env>/solution.py")
parser.add_argument("--json-dir", type=Path, default=None, help="where each grade's JSON goes")
args = parser.parse_args()
submission = args.submission or f"expert/{args.env}/solution.py"
# From a checkout that was not pip-installed (the GPU machine): the environment's folder, and
# the plugin named, as the root conftest.py names it for pytest run from the checkout.
env = Path("env_suites") / args.env if (Path("env_suites") / args.env).is_dir() else args.env
installed = any(ep.name == "nodus" for ep in importlib.metadata.entry_points(group="pytest11"))
plugin = [] if installed else ["-p", "pytest_nodus.grader.plugin"]
walls = {"fresh": [], "warm": []}
graded = 0


def one(how, grade_it):
    global graded
    began = time.perf_counter()
    g = grade_it(env, submission, sealed="sealed_fixtures", pytest_args=plugin)
    wall = time.perf_counter() - began
    p = g.document["phases"]
    speed = "-" if g.speedup is None else f"{g.speedup:.3f}x"
    print(f"{how:>6} {g.status:8} {speed:>7} wall {wall:6.2f} s  grade wall_s {g.wall_s:6.2f}  startup "
          f"{p['startup'] / 1e3:5.2f}  sandbox starts {p['start'] / 1e3:5.2f}", flush=True)
    print(f"       {phases.line(p)}", flush=True)
    if args.json_dir:
        args.json_dir.mkdir(parents=True, exist_ok=True)
        graded += 1
        (args.json_dir / f"{args.env}-{graded:02d}-{how}.json").write_text(json.dumps(g.document, indent=1))
    return wall


one("warmup", lambda *a, **k: grade(*a, device=args.device, **k))
with WarmGrader(device=args.device) as warm:
    one("first", warm.grade)
    for _ in range(args.runs):
        walls["warm"].append(one("warm", warm.grade))
        walls["fresh"].append(one("fresh", lambda *a, **k: grade(*a, device=args.device, **k)))
for how, seconds in walls.items():
    print(f"{args.env} {how:>6} median {statistics.median(seconds):.2f} s of {len(seconds)} "
          f"({', '.join(f'{s:.2f}' for s in seconds)})")
