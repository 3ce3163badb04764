"""Compile a solution's Triton kernels for the H200 (sm_90a) on a machine without a GPU, as its
``kernel`` launches them at a GPU size, and print what ptxas reports per launch: registers,
spills, shared memory, and whether the main loops became wgmma, cp.async or TMA.

    python tools/probes/sm90_compile.py ENV [--size public-0] [--sealed sealed_fixtures]
        [--set NAME=EXPR ...] [--file expert/ENV/solution.py]

How: the inputs of the size are made on the CPU and the kernel file's host code runs on
them, with its tile tables (``GPU_BRANCH``: functions of a ``torch.device``) asked for the
GPU's tiles; each Triton launch is captured instead of run (every pruned candidate of an
autotuned one), and compiled ahead of time for sm_90a with the argument types and the
integer specialisation (``== 1``, ``% 16``) that Triton's JIT would use on the device.
``--set`` replaces a module attribute of the kernel file by a Python expression first.

What it cannot say: how fast. A kernel that spills or falls back to mma.sync here does so on
the device too (same front end), but this machine's Triton may be newer than the device
image's, whose code generation can differ; speed is for tools/probes/kernel_profile.py.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import torch
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from triton.runtime.autotuner import Autotuner
from triton.runtime.jit import JITFunction

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from pytest_nodus.grader import inputs as nodus_inputs  # noqa: E402
from pytest_nodus.grader.environment import load_hidden_sizes  # noqa: E402

TYPES = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32", torch.int32: "i32",
         torch.int64: "i64", torch.uint8: "u8", torch.int8: "i8", torch.bool: "i1"}
LAUNCH_OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg")
GPU_BRANCH = ("_config",)  # the solutions' per-device tile tables
SHARED_LIMIT = 232448  # bytes of shared memory one block may use on sm_90 (227 KiB): more will not launch


def _arg_type(value) -> str | None:
    if isinstance(value, torch.Tensor):
        return "*" + TYPES[value.dtype]
    if isinstance(value, bool):
        return "i1"
    if isinstance(value, int):
        return "i32" if -(2 ** 31) <= value < 2 ** 31 else "i64"
    if isinstance(value, float):
        return "fp32"
    return None


def _captured(fn: JITFunction, args: tuple, kwargs: dict):
    """The signature, constexprs, attributes and options of one launch, as the JIT would see them."""
    bound = dict(zip(fn.arg_names, args))
    bound.update({k: v for k, v in kwargs.items() if k in fn.arg_names})
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        value = bound.get(name, fn.params[i].default)
        if fn.params[i].is_constexpr or value is None:
            signature[name], constexprs[name] = "constexpr", value
        elif isinstance(value, int) and not isinstance(value, bool) and value == 1:
            signature[name], constexprs[name] = "constexpr", 1  # Triton specialises on 1
        else:
            signature[name] = _arg_type(value)
            if signature[name] is None:
                raise TypeError(f"{fn.__name__}: argument '{name}' of type {type(value).__name__} is not handled")
            aligned = (isinstance(value, torch.Tensor)) or (isinstance(value, int) and value % 16 == 0)
            if aligned and not getattr(fn.params[i], "do_not_specialize", False):
                attrs[(i,)] = [["tt.divisibility", 16]]
    options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
    return signature, constexprs, attrs, options


def _report(fn: JITFunction, launch) -> str:
    signature, constexprs, attrs, options = launch
    compiled = triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                              target=GPUTarget("cuda", 90, 32), options=options)
    ptx = compiled.asm["ptx"]
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas-blackwell"  # the newer of the two bundled: it reads this Triton's PTX version
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
    out = subprocess.run([str(ptxas), "-v", "--gpu-name", "sm_90a", f.name, "-o", os.devnull],
                         capture_output=True, text=True).stderr
    os.unlink(f.name)
    regs = re.search(r"Used (\d+) registers", out)
    spill = re.search(r"(\d+) bytes spill stores", out)
    shown = {k: v for k, v in constexprs.items() if isinstance(v, (int, bool))}
    return (f"{fn.__name__:12s} warps {options.get('num_warps', 4)} stages {options.get('num_stages', 3)} "
            f"regs {regs.group(1) if regs else '?':>3s} spill {spill.group(1) if spill else '?':>4s} B "
            f"smem {compiled.metadata.shared:6d} B  wgmma {ptx.count('wgmma.mma_async'):3d} "
            f"mma.sync {ptx.count('mma.sync'):3d} cp.async {ptx.count('cp.async.cg') + ptx.count('cp.async.ca'):3d} "
            f"tma {ptx.count('cp.async.bulk.tensor'):2d} tma-reduce {ptx.count('cp.reduce.async.bulk'):2d}"
            f"{'  OVER 227 KiB OF SHARED MEMORY: WILL NOT LAUNCH' if compiled.metadata.shared > SHARED_LIMIT else ''}"
            f"  {shown}")


def _on_the_gpu(table):
    def asked(*args, **kwargs):
        return table(*(torch.device("cuda") if isinstance(a, torch.device) else a for a in args), **kwargs)
    return asked


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("env")
    parser.add_argument("--size", default="public-0")
    parser.add_argument("--sealed", type=Path)
    parser.add_argument("--file", type=Path)
    parser.add_argument("--set", action="append", default=[], metavar="NAME=EXPR")
    parser.add_argument("--constexpr", action="append", default=[], metavar="NAME=EXPR",
                        help="a launch's constexpr as the GPU would pass it where the host code decides on "
                             "the device (e.g. a TMA switch that the CPU run turns off)")
    args = parser.parse_args()
    env = importlib.import_module(f"env_suites.{args.env}.environment").ENVIRONMENT
    profile = env.profile("cuda")
    sizes = {f"public-{i}": d for i, d in enumerate(profile.sizes)}
    if args.sealed:
        sizes.update({f"hidden-{i}": d for i, d in enumerate(load_hidden_sizes(args.sealed, env, "cuda"))})
    path = args.file or ROOT / "expert" / args.env / "solution.py"
    spec = importlib.util.spec_from_file_location("solution", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    for assignment in args.set:
        name, _, expr = assignment.partition("=")
        setattr(module, name.strip(), eval(expr, vars(module)))
    for name in GPU_BRANCH:
        if callable(table := getattr(module, name, None)):
            setattr(module, name, _on_the_gpu(table))
    fresh = nodus_inputs.make_inputs(env, sizes[args.size], 11, torch.device("cpu"))
    launches = []

    forced = {name.strip(): eval(expr) for name, _, expr in (c.partition("=") for c in args.constexpr)}

    def capture(self, *a, grid, warmup, **kw):
        launches.append((self, _captured(self, a, {**kw, **{k: v for k, v in forced.items() if k in self.arg_names}})))

    def capture_tuned(self, *a, **kw):
        configs = self.configs
        if self.early_config_prune:
            configs = self.early_config_prune(configs, dict(zip(self.arg_names, a)), **kw)
        for config in configs:
            chosen = {**kw, **config.all_kwargs()}
            launches.append((self.fn, _captured(self.fn, a, {**chosen, **{k: v for k, v in forced.items()
                                                                            if k in self.fn.arg_names}})))

    JITFunction.run, Autotuner.run = capture, capture_tuned
    arguments = [fresh[spec.name] for spec in env.contract.inputs]
    module.kernel(*(module.prepare(*arguments) if hasattr(module, "prepare") else arguments))
    print(f"{args.env} {args.size} {sizes[args.size]}: {len(launches)} launches; sm_90a by Triton {triton.__version__}")
    seen = set()
    for fn, launch in launches:
        key = (fn.__name__, repr(launch))
        if key not in seen:
            seen.add(key)
            print("  " + _report(fn, launch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
