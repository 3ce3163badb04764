"""Calibrate moe_experts' tolerance on the CPU: normwise error per output against the fp32
reference of the expert (torch's grouped GEMM, bf16), of the starting kernel, of the same math
rounded where bf16 GEMMs round (worst case per output), and the smallest error of an fp8
(e4m3) round trip; over the CPU sizes and random small sizes of the CPU domain.

    python tools/probes/moe_tolerance.py [DRAWS]
"""

import importlib.util
import random
import sys
from pathlib import Path

import torch

from env_suites.moe_experts import environment, reference

REPO = Path(__file__).resolve().parents[2]


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def normwise(out, ref):
    return float((out.float() - ref).norm() / ref.norm().clamp_min(1e-30))


def main(draws: int) -> None:
    expert = _load(REPO / "expert" / "moe_experts" / "expert_grouped_mm.py")
    starting = _load(REPO / "env_suites" / "moe_experts" / "starting_kernel.py")
    rng = random.Random(0)
    sizes = list(environment.ENVIRONMENT.profiles["cpu"].sizes) + [
        {"T": 256, "E": 16, "K": 4, "D": 64, "F": 48, "Z": 1}, {"T": 512, "E": 32, "K": 8, "D": 128, "F": 64, "Z": 0}]
    for _ in range(draws):
        e = rng.choice((2, 4, 8))
        sizes.append({"T": rng.randint(1, 48), "E": e, "K": rng.randint(1, min(4, e)), "D": rng.choice((16, 32)),
                      "F": rng.choice((16, 24)), "Z": rng.choice((0, 1, 2))})
    worst = {kind: [0.0] * 6 for kind in ("expert", "starting", "bf16 math")}
    fp8_best = [float("inf")] * 6  # an fp8 round trip must fail everywhere: its smallest error
    for i, dims in enumerate(sizes):
        inputs = reference.make_inputs(dims, torch.Generator().manual_seed(i), torch.device("cpu"))
        ref = environment.step(inputs)
        results = {"expert": expert.kernel(**inputs), "starting": starting.kernel(**inputs),
                   "bf16 math": environment.rounded_step(inputs), "fp8": [r.to(torch.float8_e4m3fn) for r in ref]}
        for kind, outs in results.items():
            if kind == "fp8":
                fp8_best = [min(w, normwise(o, r)) for w, o, r in zip(fp8_best, outs, ref)]
            else:
                worst[kind] = [max(w, normwise(o, r)) for w, o, r in zip(worst[kind], outs, ref)]
    print(f"{len(sizes)} sizes; worst normwise error per output {environment.OUTPUTS}:")
    for kind, values in worst.items():
        print(f"  {kind:10s} " + " ".join(f"{v:.4f}" for v in values))
    print("smallest fp8 round-trip error per output: " + " ".join(f"{v:.4f}" for v in fp8_best))


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
