"""Calibrate moe_experts' tolerance on the CPU: error per output, as the environment's
tolerance measures it, against the fp32 reference of the expert (torch's grouped GEMM, bf16),
of the starting kernel, of the same math rounded where bf16 GEMMs round (worst case per
output), and the smallest error of an fp8 (e4m3) round trip; over the CPU sizes and random
small sizes of the CPU domain, a third of them with a single route (T*K = 1, where
dtopk_weights can cancel to nothing). Also the expert's worst dtopk_weights error relative
to the value alone (what the dtopk_scale floor is for).

    python tools/probes/moe_tolerance.py [DRAWS]
"""

import random
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tools/: bench_env's kernel files and loader
from bench_env import kernel_files, load  # noqa: E402

from env_suites.moe_experts import environment, reference  # noqa: E402
from pytest_nodus.grader.correctness import check_outputs  # noqa: E402

TOLERANCE = environment.ENVIRONMENT.tolerance


def normwise(out, ref):
    return float((out.float() - ref).norm() / ref.norm().clamp_min(1e-30))


def main(draws: int) -> None:
    files = kernel_files("moe_experts", environment.ENVIRONMENT.profile("cpu"))
    expert, starting = load("expert", files["expert"]), load("starting", files["starting"])
    rng = random.Random(0)
    sizes = list(environment.ENVIRONMENT.profiles["cpu"].sizes) + [
        {"T": 256, "E": 16, "K": 4, "D": 64, "F": 48, "Z": 1}, {"T": 512, "E": 32, "K": 8, "D": 128, "F": 64, "Z": 0}]
    for _ in range(draws):
        e = rng.choice((2, 4, 8))
        single = rng.random() < 1 / 3
        sizes.append({"T": 1 if single else rng.randint(1, 48), "E": e,
                      "K": 1 if single else rng.randint(1, min(4, e)), "D": rng.choice((16, 32)),
                      "F": rng.choice((16, 24)), "Z": rng.choice((0, 1, 2))})
    worst = {kind: [0.0] * 6 for kind in ("expert", "starting", "bf16 math")}
    fp8_best = [float("inf")] * 6  # an fp8 round trip must fail everywhere: its smallest error
    value_only = 0.0
    failed = {kind: 0 for kind in worst}  # sizes the grader's check (limits widened) fails
    worst_dims = {}
    for i, dims in enumerate(sizes):
        inputs = reference.make_inputs(dims, torch.Generator().manual_seed(i), torch.device("cpu"))
        ref = environment.step(inputs)
        by_name = dict(zip(environment.OUTPUTS + tuple(environment.ENVIRONMENT.error_scales), ref))
        results = {"expert": expert.kernel(**inputs), "starting": starting.kernel(**inputs),
                   "bf16 math": environment.rounded_step(inputs), "fp8": [r.to(torch.float8_e4m3fn) for r in ref]}
        for kind, outs in results.items():
            errors = [TOLERANCE[n].error(o, by_name[n], by_name) for n, o in zip(environment.OUTPUTS, outs)]
            if kind == "fp8":
                fp8_best = [min(w, e) for w, e in zip(fp8_best, errors)]
            else:
                if errors[5] > worst[kind][5]:
                    worst_dims[kind] = dims
                worst[kind] = [max(w, e) for w, e in zip(worst[kind], errors)]
                checks = check_outputs(outs, ref, environment.ENVIRONMENT.contract, TOLERANCE,
                                       lambda: environment.rounded_step(inputs), tuple(environment.ENVIRONMENT.error_scales))
                failed[kind] += not all(c.passed for c in checks)
        value_only = max(value_only, normwise(results["expert"][5], ref[5]))
    print(f"{len(sizes)} sizes; worst normwise error per output {environment.OUTPUTS}:")
    for kind, values in worst.items():
        print(f"  {kind:10s} " + " ".join(f"{v:.4f}" for v in values))
    print("sizes the grader's check fails: " + ", ".join(f"{k} {v}" for k, v in failed.items()))
    print("worst dtopk_weights at: " + ", ".join(f"{k} {v}" for k, v in worst_dims.items()))
    print("smallest fp8 round-trip error per output: " + " ".join(f"{v:.4f}" for v in fp8_best))
    print(f"expert's worst dtopk_weights error relative to the value alone: {value_only:.4f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 40)
