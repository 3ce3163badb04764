"""Whether Triton compiles side by side in threads here: a kernel file's launches at a GPU size,
compiled for sm_90a (to cubin, ptxas included; no GPU needed) one after the other, then each in
its own thread, with a fresh cache for each pass.

    python3 tools/probes/parallel_compile.py [ENV] [KERNEL_FILE] [--size public-N] [--reps 2]

A solution that compiles its autotuning candidates ahead (``COMPILE_AHEAD``) gains only where
the threads' wall is well under the sequential one.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_nodus.commands import sm90  # noqa: E402
from pytest_nodus.grader.api import installed_environments  # noqa: E402


def _compile(launch) -> None:
    sm90.compile_sm90(*launch)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env", nargs="?", default="attention_backward")
    parser.add_argument("kernel_file", nargs="?", default="expert/attention_backward/solution.py")
    parser.add_argument("--size", default="public-1")
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    env = installed_environments()[args.env].load()
    dims = dict(env.profile("cuda").sizes[int(args.size.split("-")[1])])
    launches, _ = sm90._launches(env, sm90._load(Path(args.kernel_file)), dims, {})
    names = sorted({launch[0].__name__ for launch in launches})
    print(f"{args.env} {args.size} {dims}: {len(launches)} launches ({', '.join(names)})")
    for _ in range(args.reps):
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
        start = time.perf_counter()
        for launch in launches:
            _compile(launch)
        in_turn = time.perf_counter() - start
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp()
        threads = [threading.Thread(target=_compile, args=(launch,)) for launch in launches]
        start = time.perf_counter()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        side_by_side = time.perf_counter() - start
        print(f"  in turn {in_turn:.2f} s, side by side in {len(threads)} threads {side_by_side:.2f} s "
              f"({os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
