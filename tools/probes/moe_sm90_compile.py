"""Compile the moe_experts solution's kernels for the H200 (sm_90a) on a machine without a GPU
and print what ptxas reports per kernel: registers, spills, shared memory, and whether the
main loops became wgmma and cp.async. A kernel that spills or falls back to mma.sync here
does so on the device too (same Triton front end; the device image's Triton is older).

    python tools/probes/moe_sm90_compile.py

Integer arguments are compiled as multiples of 16, as Triton's JIT specialises them on the
GPU for every size of the domain (D and F are multiples of 64 there).
"""

import importlib.util
import os
import subprocess
import tempfile
from pathlib import Path

import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

SOLUTION = Path(__file__).resolve().parents[2] / "expert" / "moe_experts" / "solution.py"
P, I = "*bf16", "*i32"
TILE = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64)
ROUTES = dict(tile_expert=I, tile_row0=I, expert_end=I)
UP = dict(x=P, route_token=I, route_weight="*fp32", w1=P, w3=P, h1=P, h3=P, act=P, act_weighted=P, **ROUTES,
          D="i32", F="i32")
ROWS = dict(a=P, a_token=I, a_weight="*fp32", b=P, a2=P, b2=P, c=P, c2=P, h1=P, h3=P, **ROUTES, N="i32", K="i32",
            b_stride_n="i32", b_stride_k="i32")
WEIGHTS = dict(a=P, a_token=I, b=P, b_token=I, dw=P, expert_start=I, expert_end=I, N1="i32", N2="i32")
COMBINE = dict(o=P, dx_route=P, dy=P, weights="*fp32", route_pos=I, y=P, dx=P, dweights="*fp32", D="i32")
# label: (kernel, signature, constexprs, warps), as solution.kernel launches them on the GPU
KERNELS = {
    "_up": ("_up", UP, dict(TILE, BLOCK_N=64), 8),
    "_rows (dx: two products)": ("_rows", ROWS, dict(TILE, GATHER=False, TWO=True, SWIGLU_BACKWARD=False), 8),
    "_rows (da: gathered, SwiGLU backward)": ("_rows", ROWS, dict(TILE, BLOCK_N=64, GATHER=True, TWO=False,
                                                                  SWIGLU_BACKWARD=True), 8),
    "_weights (dW2: gathered A)": ("_weights", WEIGHTS, dict(TILE, GATHER_A=True, GATHER_B=False), 8),
    "_combine": ("_combine", COMBINE, dict(K=8, BLOCK_D=1024), 4),
}


def main() -> None:
    spec = importlib.util.spec_from_file_location("solution", SOLUTION)
    solution = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(solution)
    ptxas = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "ptxas-blackwell"
    for label, (name, signature, constexprs, warps) in KERNELS.items():
        full = {**signature, **{k: "constexpr" for k in constexprs}}
        attrs = {(i,): [["tt.divisibility", 16]] for i, k in enumerate(full) if full[k] != "constexpr"}
        compiled = triton.compile(ASTSource(fn=getattr(solution, name), signature=full, constexprs=constexprs,
                                            attrs=attrs),
                                  target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": 3})
        with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
            f.write(compiled.asm["ptx"])
        report = subprocess.run([str(ptxas), "-v", "--gpu-name", "sm_90a", f.name, "-o", os.devnull],
                                capture_output=True, text=True).stderr
        os.unlink(f.name)
        regs = next((line.split("Used ")[1].split(",")[0] for line in report.splitlines() if "Used " in line), "?")
        spills = next((line.strip() for line in report.splitlines() if "spill" in line), "?")
        ptx = compiled.asm["ptx"]
        print(f"{label:40s} {regs:14s} smem {compiled.metadata.shared:6d} B  {spills}  "
              f"wgmma={'wgmma' in ptx} cp.async={'cp.async' in ptx}")


if __name__ == "__main__":
    main()
