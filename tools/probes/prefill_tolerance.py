"""Calibrate chunked_prefill's tolerance on the CPU: the normwise error of the bf16 math an
honest FlashAttention-style kernel does (P rounded to bf16 before P V, o rounded to bf16)
and of an fp8 (e4m3) round trip of the output, both against the fp32 reference.

    python tools/probes/prefill_tolerance.py
"""

import torch

from env_suites.chunked_prefill import environment, reference

SIZES = [{"B": 4, "Q": 256, "L": 1024, "Hq": 8, "Hkv": 2, "D": 128, "P": 16},
         {"B": 1, "Q": 512, "L": 2048, "Hq": 4, "Hkv": 4, "D": 64, "P": 64},
         {"B": 16, "Q": 64, "L": 512, "Hq": 8, "Hkv": 1, "D": 256, "P": 16},
         *environment.ENVIRONMENT.profiles["cpu"].sizes]


def normwise(out, ref):
    return float((out.float() - ref).norm() / ref.norm())


for dims in SIZES:
    for seed in range(3):
        inputs = reference.make_inputs(dims, torch.Generator().manual_seed(seed), torch.device("cpu"))
        (ref,) = environment.attention(inputs)
        (rounded,) = environment.rounded_attention(inputs)
        fp8 = ref.to(torch.float8_e4m3fn).float()
        print(f"{dims} seed {seed}: bf16 math {normwise(rounded, ref):.4f}  fp8 round trip {normwise(fp8, ref):.4f}")
