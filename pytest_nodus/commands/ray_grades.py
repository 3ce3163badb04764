"""``nodus-ray``: grade attempts as Ray tasks across a cluster, one row per attempt.

    nodus-ray attention_backward attempts/ --sealed sealed_fixtures --device cuda \\
        --jsonl grades.jsonl --out grades/ --png batch.png [--address auto] [--retries 1] [--per-task N] [--warm]

Attempts are kernel files or folders of them (``*.py``). Rows (JSON Lines, in the attempts'
order): index, attempt, status, reward, speedup, flags, tries, wall_s; ``--out`` keeps each
full grade; ``--png`` draws one dot per attempt, reward paid against the speed the timer
measured (``nodus-plot``'s figure: files named solution*, starting*, cheat_* marked as
such, other attempts by verdict; needs matplotlib); ``--per-task N`` grades N attempts per task
as one batch against one expert run on its GPU; ``--warm`` grades from a warm process each
worker keeps across its tasks (``pytest_nodus.WarmGrader``). Needs the ray extra (``pip install pytest-nodus[ray]``); see
``pytest_nodus/fanout/ray_grades.py``.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-ray", description=__doc__.split("\n\n")[0])
    parser.add_argument("env", help="an installed environment's name or an environment's folder")
    parser.add_argument("attempts", nargs="+", help="kernel files or folders of them")
    parser.add_argument("--sealed", help="the folder of hidden sizes (a sealed grade)")
    parser.add_argument("--device", default="auto", choices=("auto", "cuda", "cpu"))
    parser.add_argument("--reruns", type=int, default=1)
    parser.add_argument("--retries", type=int, default=1, help="new tries for an attempt whose worker was lost")
    parser.add_argument("--jsonl", help="write the rows here")
    parser.add_argument("--out", help="write each full grade here, as <index>-<file stem>.json")
    parser.add_argument("--png", help="draw the batch here: reward against measured speed, one dot per attempt")
    parser.add_argument("--address", help="the Ray cluster to join (default: a local instance)")
    parser.add_argument("--per-task", type=int, default=1,
                        help="attempts per task: graded as one batch against one expert run on its GPU")
    parser.add_argument("--warm", action="store_true",
                        help="each worker grades from a warm grading process it keeps across its tasks")
    args = parser.parse_args(argv)
    import ray

    from pytest_nodus.fanout.ray_grades import grade_attempts
    from pytest_nodus.grader import batch_files

    if not ray.is_initialized():
        ray.init(address=args.address)
    rows = grade_attempts(args.env, args.attempts, sealed=args.sealed, device=args.device, reruns=args.reruns,
                          retries=args.retries, jsonl=args.jsonl, out_dir=args.out, per_task=args.per_task,
                          warm=args.warm)
    for row in rows:
        sys.stdout.write(json.dumps(row) + "\n")
    if args.png and not batch_files.draw_rows(args.png, rows, f"{args.env}: {len(rows)} attempts"):
        sys.stderr.write("nodus-ray: --png needs matplotlib (pip install pytest-nodus[plot])\n")
    return 0 if all(row["status"] == "correct" for row in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
