"""Probe (H200): can attention kernels compiled into torch be taken out of a process?

  python3 tools/probes/fatbin_probe.py list      # the fatbins of libtorch_cuda.so, by source
  python3 tools/probes/fatbin_probe.py control   # SDPA backends forward+backward, nothing removed
  python3 tools/probes/fatbin_probe.py remove    # the same after pytest_nodus.fatbin.remove_kernels

Each mode runs in a fresh process: a kernel once loaded stays loaded.
"""
import collections
import os
import sys
import time

os.environ.setdefault("CUDA_MODULE_LOADING", "LAZY")
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch.nn.attention import SDPBackend, sdpa_kernel  # noqa: E402

from pytest_nodus import fatbin  # noqa: E402

PATTERNS = (r"pytorch_flash", r"fmha_cutlass")  # FlashAttention-2, memory-efficient attention
CACHE = "/tmp/fatbin-probe-cache"


def listing():
    path = fatbin.loaded_library("libtorch_cuda")
    t0 = time.perf_counter()
    found = fatbin.forbidden_fatbins(path, PATTERNS, CACHE)
    print(f"{path}: section {found['section']}; {len(found['spans'])} fatbins hold {found['kernels']} matching kernels"
          f" ({sum(s for _, s in found['spans']) / 2**20:.1f} MiB); found in {time.perf_counter() - t0:.1f} s")
    t0 = time.perf_counter()
    fatbin.forbidden_fatbins(path, PATTERNS, CACHE)
    print(f"cached lookup {time.perf_counter() - t0:.3f} s")
    _, offset, _ = fatbin.elf_section(path, ".nv_fatbin")
    matcher = __import__("re").compile("|".join(PATTERNS))
    other_attention = collections.Counter()
    with open(path, "rb") as f:
        def read(at, n):
            f.seek(offset + at)
            return f.read(n)
        for i, (at, size) in enumerate(found["spans"]):
            names = fatbin.kernel_names(read(at, size))
            kept = [n for n in names if not matcher.search(n)]
            if i < 3 or kept:
                print(f"  span {at}: {len(names)} kernels, e.g. {names[0][:90]}; not matching: {kept[:3]}")
        unloadable = 0
        for b in fatbin.walk(read, fatbin.elf_section(path, ".nv_fatbin")[2]):
            if [b.offset, b.size] in found["spans"]:
                continue
            names = fatbin.kernel_names(read(b.offset, b.size))
            if names is None:
                unloadable += 1
                continue
            for n in names:
                if any(w in n.lower() for w in ("attention", "flash", "fmha", "sdp", "softmax")):
                    other_attention[n[:100]] += 1
    print("fatbins this GPU cannot load:", unloadable)
    print("kept kernels with attention-like names:", len(other_attention))
    for n, _ in other_attention.most_common(12):
        print("   ", n)


def backends():
    torch.manual_seed(0)
    q, k, v = (torch.randn(2, 8, 1024, 128, device="cuda", dtype=torch.bfloat16, requires_grad=True) for _ in range(3))
    for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH):
        try:
            with sdpa_kernel(backend):
                out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                out.sum().backward()
            torch.cuda.synchronize()
            print(f"{backend.name}: ran, |dq| {q.grad.float().norm():.3f}")
        except Exception as exc:  # noqa: BLE001
            print(f"{backend.name}: FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
        q.grad = k.grad = v.grad = None
    try:
        dq, *_ = torch.ops.aten._flash_attention_backward(
            torch.randn(1024, 8, 128, device="cuda", dtype=torch.bfloat16), *(
                torch.randn(1024, 8, 128, device="cuda", dtype=torch.bfloat16) for _ in range(3)),
            torch.randn(1024, 8, 128, device="cuda", dtype=torch.bfloat16),
            torch.zeros(8, 1024, device="cuda"), torch.tensor([0, 1024], device="cuda", dtype=torch.int32),
            torch.tensor([0, 1024], device="cuda", dtype=torch.int32), 1024, 1024, 0.0, True,
            torch.zeros(2, dtype=torch.int64, device="cuda"), torch.zeros((), dtype=torch.int64, device="cuda"),
            scale=0.088, window_size_left=255, window_size_right=0)
        torch.cuda.synchronize()
        print("aten::_flash_attention_backward varlen+window: ran")
    except Exception as exc:  # noqa: BLE001
        print(f"aten::_flash_attention_backward varlen+window: FAILED {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    ref = (a.float() @ a.float()).bfloat16()
    print("matmul still right:", torch.allclose((a @ a).float(), ref.float(), rtol=0.05, atol=1.0),
          "softmax:", bool(torch.softmax(a, -1).sum(-1).float().sub(1).abs().max() < 0.05),
          "layer_norm:", bool(F.layer_norm(a, (4096,)).isfinite().all()))


if __name__ == "__main__":
    mode = sys.argv[1]
    torch.empty(1, device="cuda")
    if mode == "list":
        listing()
    else:
        if mode == "remove":
            t0 = time.perf_counter()
            found = fatbin.forbidden_fatbins(fatbin.loaded_library("libtorch_cuda"), PATTERNS, CACHE)
            removal = fatbin.overwrite(found)
            print(f"removed in {time.perf_counter() - t0:.2f} s:", removal.as_dict())
        backends()
