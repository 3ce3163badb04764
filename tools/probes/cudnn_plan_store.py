"""Whether a cuDNN expert's stored plan loads in a later process and computes the same, on the GPU.

    python3 tools/probes/cudnn_plan_store.py [--only chunked_prefill] [--size public-0]

Per cuDNN expert (chunked_prefill, attention_backward): a first process, with an empty plan
store (pytest_nodus/trusted/cudnn_plans.py), calls the expert once at one public size (building and storing
every capacity's plan); a second process, the same store, calls it on the same inputs
(loading them). Prints each process's first-call seconds, the plans stored, and the two outputs' normwise
distance. Exit status 1 where they differ, nothing was stored, or the load was not faster.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ONE_PROCESS = r"""
import importlib, importlib.util, json, sys, time
import torch
sys.path.insert(0, sys.argv[1])
from pytest_nodus.grader import inputs
env = importlib.import_module(f"env_suites.{sys.argv[2]}.environment").ENVIRONMENT
labels = {f"public-{i}": d for i, d in enumerate(env.profile("cuda").sizes)}
dims = labels[sys.argv[3]]
spec = importlib.util.spec_from_file_location("expert_cuda", env.profile("cuda").expert)
expert = importlib.util.module_from_spec(spec)
spec.loader.exec_module(expert)
fresh = inputs.make_inputs(env, dims, 12345, torch.device("cuda"))
args = [fresh[s.name] for s in env.contract.inputs]
torch.cuda.synchronize()
start = time.perf_counter()
out = expert.kernel(*args)
torch.cuda.synchronize()
seconds = time.perf_counter() - start
outs = [out] if isinstance(out, torch.Tensor) else list(out)
torch.save([o.cpu() for o in outs], sys.argv[4])
print(json.dumps({"seconds": round(seconds, 3)}))
"""


def run(env_name: str, size: str, store: Path, outputs: Path) -> dict:
    environ = dict(os.environ, NODUS_TRUSTED_CACHE=str(store), PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", ONE_PROCESS, str(ROOT), env_name, size, str(outputs)], env=environ,
                          capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1:] or ["exit %d" % done.returncode]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def _distance(first: Path, second: Path) -> float | None:
    """The largest normwise distance between two saved output lists, None where one is missing."""
    import torch

    if not (first.exists() and second.exists()):
        return None
    pairs = zip(torch.load(first), torch.load(second))
    return max(float((a.float() - b.float()).norm() / b.float().norm().clamp_min(1e-30)) for a, b in pairs)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="chunked_prefill,attention_backward")
    parser.add_argument("--size", default="public-0")
    args = parser.parse_args()
    ok = True
    for env_name in args.only.split(","):
        with tempfile.TemporaryDirectory() as folder:
            store = Path(folder) / "store"
            started = time.perf_counter()
            built = run(env_name, args.size, store, Path(folder) / "built.pt")
            stored = list((store / "cudnn-plans").glob("*.plan"))
            loaded = run(env_name, args.size, store, Path(folder) / "loaded.pt")
            distance = _distance(Path(folder) / "built.pt", Path(folder) / "loaded.pt")
            # cuDNN's backward may sum dQ with atomics: two runs of one plan differ in rounding.
            same = distance is not None and distance <= 1e-3
            ok &= same and bool(stored) and loaded.get("seconds", 1e9) < built.get("seconds", 0)
            print(f"{env_name} {args.size}: built {built}, stored {len(stored)} plans, loaded {loaded}, "
                  f"normwise distance {distance} ({time.perf_counter() - started:.1f} s)", flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
