"""A batch against the same attempts graded one by one: wall times and verdicts.

    python tools/probes/batch_speed.py [ENV] [--sealed sealed_fixtures] [--device cpu] [FILE ...]

Copies the attempts (by default rmsnorm's solution, starting kernel, four correct styles and
two cheats) into one folder, grades the folder as one batch (``--nodus-submission=DIR``),
then each file alone with the same ``--nodus-seed``, and prints both walls and whether every
attempt's status and flag codes agree. Sealed grades draw a secret seed, so a sealed run
compares walls only when ``--sealed`` is given; verdicts are compared on local grades.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RMSNORM = ["expert/rmsnorm/solution.py", "env_suites/rmsnorm/starting_kernel.py",
           "tests/correct/rmsnorm/torch_ops.py", "tests/correct/rmsnorm/chunked_rows.py",
           "tests/correct/rmsnorm/triton_two_kernels.py", "tests/correct/rmsnorm/threads_joined.py",
           "tests/cheats/rmsnorm/half_rows.py", "tests/cheats/rmsnorm/mutate_input.py"]
SEED = "--nodus-seed=20261204"


def _grade(env: str, submission: Path, out: Path, extra: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "pytest", str(ROOT / "env_suites" / env), "-q", "-p", "no:cacheprovider",
                    f"--rootdir={ROOT}", f"--nodus-submission={submission}", f"--nodus-json={out}", *extra],
                   cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    return time.perf_counter() - started


def _verdict(document: dict) -> tuple:
    return document["status"], sorted({f["code"] for f in document["flags"]})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env", nargs="?", default="rmsnorm")
    parser.add_argument("files", nargs="*")
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    files = args.files or RMSNORM
    extra = [f"--nodus-device={args.device}"] + ([f"--nodus-sealed={args.sealed}"] if args.sealed else [SEED])
    with tempfile.TemporaryDirectory() as tmp:
        folder, work = Path(tmp) / "attempts", Path(tmp)
        folder.mkdir()
        names = []
        for i, path in enumerate(files):  # an index keeps the batch's name order the list's order
            names.append(f"{i:02d}_{Path(path).stem}.py")
            shutil.copy(ROOT / path, folder / names[-1])
        batch_s = _grade(args.env, folder, work / "batch", extra)
        separate_s, same = 0.0, []
        for i, name in enumerate(names):
            separate_s += _grade(args.env, folder / name, work / f"alone-{i}.json", extra)
            alone = json.loads((work / f"alone-{i}.json").read_text())
            batched = json.loads((work / "batch" / f"{i}-{Path(name).stem}.json").read_text())
            same.append(_verdict(alone) == _verdict(batched))
            print(f"{name:40s} alone {_verdict(alone)}  batch {_verdict(batched)}", flush=True)
    print(f"{len(files)} attempts: separate {separate_s:.1f} s, one batch {batch_s:.1f} s "
          f"({separate_s / batch_s:.2f}x); verdicts {'all equal' if all(same) else 'DIFFER'}"
          f"{' (sealed: secret seeds, compare walls only)' if args.sealed else ''}")
    return 0 if all(same) or args.sealed else 1


if __name__ == "__main__":
    raise SystemExit(main())
