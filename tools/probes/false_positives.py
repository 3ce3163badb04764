"""Hunt false positives on the CPU: run correct kernels in this process (no sandbox) over many
sizes of an environment's CPU domain, drawn as Hypothesis tends to draw them (a dim at its
low or high end often), and check every output as the grader does (limits widened by the
rounded reference). A correct kernel must fail none.

    python tools/probes/false_positives.py ENV [DRAWS] [--kernels expert,solution,starting] [--seed S]

Prints per kernel: sizes failed (with the first few failing dims and checks) and the worst
error per output as a fraction of its base limit.
"""

import argparse
import importlib
import random
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench_env's kernel files and loader
from bench_env import kernel_files, load  # noqa: E402

from pytest_nodus.grader.correctness import check_outputs  # noqa: E402
from pytest_nodus.grader.environment import IntRange  # noqa: E402
from pytest_nodus.sandbox import triton_interpreter  # noqa: E402


def _draw(domain, rng: random.Random) -> dict:
    while True:
        dims = {}
        for name, dim in domain.dims.items():
            if isinstance(dim, IntRange):
                roll = rng.random()
                dims[name] = dim.low if roll < 1 / 3 else dim.high if roll < 1 / 2 else rng.randint(dim.low, dim.high)
            else:
                dims[name] = rng.choice(dim.values)
        if domain.constraint(dims):
            return dims


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("draws", type=int, nargs="?", default=200)
    parser.add_argument("--kernels", default="expert,solution,starting")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--set", action="append", default=[], metavar="ATTR=EXPR",
                        help="replace a module attribute of every kernel file by a Python expression first "
                             "(e.g. a solution's _config, to check a tile or path it does not take by default)")
    args = parser.parse_args()
    triton_interpreter.install()  # as the sandbox does on the CPU path
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    profile = env.profile("cpu")
    paths = kernel_files(args.env, profile)
    modules = {name: load(name, paths[name]) for name in args.kernels.split(",")}
    for item in args.set:
        attr, expr = item.split("=", 1)
        for module in modules.values():
            setattr(module, attr, eval(expr, vars(module)))
    kernels = {name: module.kernel for name, module in modules.items()}
    names = [o.name for o in env.contract.outputs]
    rng = random.Random(args.seed)
    failed = {k: [] for k in kernels}
    worst = {k: dict.fromkeys(names, 0.0) for k in kernels}
    start = time.time()
    for i in range(args.draws):
        dims = _draw(profile.domain, rng)
        inputs = env.make_inputs(dims, torch.Generator().manual_seed(args.seed * 1_000_003 + i), torch.device("cpu"))
        references = env.reference(inputs)
        rounded = None if env.rounded_reference is None else (lambda: env.rounded_reference(inputs))
        for kernel_name, kernel in kernels.items():
            outputs = kernel(**{k: (v.clone() if isinstance(v, torch.Tensor) else v) for k, v in inputs.items()})
            outputs = outputs if isinstance(outputs, (tuple, list)) else (outputs,)
            checks = check_outputs(list(outputs), references, env.contract, env.tolerance, rounded,
                                   tuple(env.error_scales))
            for c in checks:
                worst[kernel_name][c.name] = max(worst[kernel_name][c.name], c.error / env.tolerance[c.name].limit)
            if not all(c.passed for c in checks):
                failed[kernel_name].append((dims, [(c.name, round(c.error, 5), round(c.limit, 5))
                                                   for c in checks if not c.passed]))
    print(f"{env.name}: {args.draws} sizes of the CPU domain in {time.time() - start:.0f} s")
    for kernel_name in kernels:
        print(f"  {kernel_name}: {len(failed[kernel_name])} failed; worst error / limit: "
              + ", ".join(f"{n} {v:.2f}" for n, v in worst[kernel_name].items()))
        for dims, bad in failed[kernel_name][:5]:
            print(f"    {dims}: {bad}")


if __name__ == "__main__":
    main()
