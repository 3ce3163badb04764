"""nodus-sm90: compile a kernel file for the H200 (sm_90a) on a machine without a GPU, as its
``kernel`` launches its Triton kernels (Gluon's too) at a GPU size, and print what ptxas
reports per launch: registers, spills, shared memory (warned past the 227 KiB a block may
use), whether the main loops became wgmma, cp.async, TMA loads or TMA reduce-adds, and where
warp-specialised partitions trade registers (setmaxnreg).

    nodus-sm90 ENV KERNEL_FILE [--size public-0] [--sealed DIR] [--set NAME=EXPR] [--constexpr NAME=EXPR]

How: the environment's inputs at that size are made on the CPU and the kernel file's host
code runs on them, first moved to torch's ``meta`` device (nothing is computed, and a file
that branches on its device takes its non-CPU branch), or, where an op has no meta
implementation, on the CPU tensors themselves (the output says which). Tile tables named in
``GPU_BRANCH`` (functions of a ``torch.device``) are asked for the GPU's tiles. Each Triton
launch is captured instead of run (every pruned candidate of an autotuned one) and compiled
ahead of time with the argument types and the integer specialisation (``== 1``, ``% 16``)
that Triton's JIT would use on the device. ``--set`` replaces a module attribute of the file
by a Python expression first; ``--constexpr`` forces a kernel parameter the host code only
sets on a GPU (a TMA switch, say).

What it cannot say: how fast. A kernel that spills or overflows shared memory here does so
on the device too (same front end), but this machine's Triton may be newer than the one the
grader runs, whose code generation can differ: put the device's Triton first on PYTHONPATH
(docs/gpu.md). It runs the kernel file's host code in this
process: for an author's own file, never a stranger's.
"""

from __future__ import annotations

import argparse
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
from triton.experimental.gluon._runtime import GluonASTSource
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor as GluonTensorDescriptor
from triton.tools.tensor_descriptor import TensorDescriptor

from pytest_nodus.grader import inputs as nodus_inputs
from pytest_nodus.grader.api import installed_environments
from pytest_nodus.grader.environment import load_hidden_sizes

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
    if isinstance(value, TensorDescriptor):  # a host-made TMA descriptor, passed by value
        return f"tensordesc<{TYPES[value.base.dtype]}[{', '.join(str(b) for b in value.block_shape)}]>"
    if isinstance(value, GluonTensorDescriptor):  # Gluon's also carries its shared-memory layout
        return (f"tensordesc<{TYPES[value.base.dtype]}[{', '.join(str(b) for b in value.block_shape)}],"
                f"{value.layout!r}>")
    return None


def _captured(fn: JITFunction, args: tuple, kwargs: dict):
    """The signature, constexprs, attributes and options of one launch, as the JIT would see them."""
    bound = dict(zip(fn.arg_names, args))
    bound.update({k: v for k, v in kwargs.items() if k in fn.arg_names})
    signature, constexprs, attrs = {}, {}, {}
    for i, name in enumerate(fn.arg_names):
        value = bound.get(name, fn.params[i].default)
        specialised = not getattr(fn.params[i], "do_not_specialize", False)
        if fn.params[i].is_constexpr or value is None:
            signature[name], constexprs[name] = "constexpr", value
        elif isinstance(value, int) and not isinstance(value, bool) and value == 1 and specialised:
            signature[name], constexprs[name] = "constexpr", 1  # Triton specialises on 1
        else:
            signature[name] = _arg_type(value)
            if signature[name] is None:
                raise TypeError(f"{fn.__name__}: argument '{name}' of type {type(value).__name__} is not handled")
            aligned = (isinstance(value, torch.Tensor)) or (isinstance(value, int) and value % 16 == 0)
            if aligned and specialised:
                attrs[(i,)] = [["tt.divisibility", 16]]
    options = {k: kwargs[k] for k in LAUNCH_OPTIONS if k in kwargs}
    return signature, constexprs, attrs, options


def compile_sm90(fn: JITFunction, launch):
    """One captured launch (``_captured``) compiled for sm_90a as Triton's JIT would on the H200."""
    signature, constexprs, attrs, options = launch
    # Gluon's source sets what its kernels' warp-specialised regions need (their warp counts).
    source = GluonASTSource if fn.is_gluon() else ASTSource
    return triton.compile(source(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options=options)


def _report(fn: JITFunction, launch) -> str:
    _, constexprs, _, options = launch
    compiled = compile_sm90(fn, launch)
    ptx = compiled.asm["ptx"]
    # Where Triton bundles two, the newer (ptxas-blackwell) is the one that reads its PTX version.
    bundled = Path(triton.__file__).parent / "backends" / "nvidia" / "bin"
    ptxas = next((p for p in (bundled / "ptxas-blackwell", bundled / "ptxas") if p.exists()), bundled / "ptxas")
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
            f"{f' setmaxnreg {n}' if (n := ptx.count('setmaxnreg')) else ''}"
            f"{'  WGMMA SERIALISED (ptxas C7514)' if 'C7514' in out else ''}"
            f"{'  OVER 227 KiB OF SHARED MEMORY: WILL NOT LAUNCH' if compiled.metadata.shared > SHARED_LIMIT else ''}"
            f"  {shown}")


def _on_the_gpu(table):
    def asked(*args, **kwargs):
        return table(*(torch.device("cuda") if isinstance(a, torch.device) else a for a in args), **kwargs)
    return asked


def _load(path: Path):
    spec = importlib.util.spec_from_file_location("kernel_file", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launches(env, module, dims, forced: dict, arguments=None) -> tuple[list, str]:
    """The kernel file's launches at ``dims``, and on which tensors its host code ran;
    ``arguments``: the call's, where the caller made them (else the environment's, on the CPU)."""
    launches = []

    def force(fn, kwargs):
        return {**kwargs, **{k: v for k, v in forced.items() if k in fn.arg_names}}

    def capture(self, *a, grid, warmup, **kw):
        launches.append((self, _captured(self, a, force(self, kw))))

    def capture_tuned(self, *a, **kw):
        configs = self.configs
        if self.early_config_prune:
            configs = self.early_config_prune(configs, dict(zip(self.arg_names, a)), **kw)
        for config in configs:
            launches.append((self.fn, _captured(self.fn, a, force(self.fn, {**kw, **config.all_kwargs()}))))

    if arguments is None:
        fresh = nodus_inputs.make_inputs(env, dims, 11, torch.device("cpu"))
        arguments = [fresh[spec.name] for spec in env.contract.inputs]

    def run(args):
        launches.clear()
        module.kernel(*(module.prepare(*args) if hasattr(module, "prepare") else args))
        return launches

    originals = JITFunction.run, Autotuner.run
    JITFunction.run, Autotuner.run = capture, capture_tuned
    try:
        try:
            return run([a.to("meta") if isinstance(a, torch.Tensor) else a for a in arguments]), "meta"
        except Exception:  # noqa: BLE001  an op with no meta implementation (bincount, .item()): on the CPU then
            return run(arguments), "cpu"
    finally:
        JITFunction.run, Autotuner.run = originals  # a caller in the same process launches for real after


def load_for_the_gpu(path: Path, sets=()):
    """The kernel file as a module, each ``NAME=EXPR`` of ``sets`` assigned in it, whose tile
    tables (``GPU_BRANCH``) then answer for the GPU."""
    module = _load(path)
    for assignment in sets:
        name, _, expr = assignment.partition("=")
        setattr(module, name.strip(), eval(expr, vars(module)))
    for name in GPU_BRANCH:
        if callable(table := getattr(module, name, None)):
            setattr(module, name, _on_the_gpu(table))
    return module


def variants(env, module, dims, arguments=None) -> set[tuple[str, str]]:
    """What Triton's JIT would compile for the launches at ``dims`` (on ``arguments`` where
    given): (kernel, specialisation) pairs, one per binary. Two sizes whose sets are equal
    share every compiled kernel."""
    launches, _ = _launches(env, module, dims, {}, arguments)
    return {(fn.__name__, repr(launch)) for fn, launch in launches}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="nodus-sm90", description=__doc__.split("\n\n")[0])
    parser.add_argument("env", help="an installed environment (rmsnorm, attention_backward, ...)")
    parser.add_argument("kernel", type=Path, help="the kernel file")
    parser.add_argument("--size", default="public-0", help="public-N, or hidden-N with --sealed")
    parser.add_argument("--sealed", type=Path, help="the grader's hidden sizes (sealed_fixtures/)")
    parser.add_argument("--set", action="append", default=[], metavar="NAME=EXPR")
    parser.add_argument("--constexpr", action="append", default=[], metavar="NAME=EXPR")
    args = parser.parse_args(argv)
    known = installed_environments()
    if args.env not in known:
        parser.error(f"no environment '{args.env}'; installed: {', '.join(sorted(known))}")
    env = known[args.env].load()
    sizes = {f"public-{i}": d for i, d in enumerate(env.profile("cuda").sizes)}
    if args.sealed:
        sizes.update({f"hidden-{i}": d for i, d in enumerate(load_hidden_sizes(args.sealed, env, "cuda"))})
    if args.size not in sizes:
        parser.error(f"no size '{args.size}'; known: {', '.join(sizes)}")
    module = load_for_the_gpu(args.kernel, args.set)
    forced = {name.strip(): eval(expr) for name, _, expr in (c.partition("=") for c in args.constexpr)}
    launches, where = _launches(env, module, sizes[args.size], forced)
    branch = "meta tensors (its non-CPU branch)" if where == "meta" else \
        "CPU tensors (an op had no meta implementation: a file that branches on its device took its CPU branch)"
    print(f"{args.env} {args.size} {sizes[args.size]}: {len(launches)} launches, host code on {branch}; "
          f"sm_90a by Triton {triton.__version__}")
    seen, over = set(), False
    for fn, launch in launches:
        key = (fn.__name__, repr(launch))
        if key not in seen:
            seen.add(key)
            line = _report(fn, launch)
            over |= "WILL NOT LAUNCH" in line
            print("  " + line)
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
