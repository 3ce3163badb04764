"""On the CPU path the Triton interpreter's bf16 arithmetic matches torch's."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from conftest import REPO


def test_interpreter_bf16_arithmetic_matches_torch():
    kernel = textwrap.dedent("""
        import torch, triton, triton.language as tl
        from pytest_nodus.sandbox import triton_interpreter
        triton_interpreter.install()

        @triton.jit
        def ops(x_ptr, y_ptr, out_ptr, cast_ptr, min_ptr, a_ptr, b_ptr, dot_ptr, N: tl.constexpr):
            i = tl.arange(0, N)
            x = tl.load(x_ptr + i); y = tl.load(y_ptr + i)
            tl.store(out_ptr + i, x * y + x)
            tl.store(cast_ptr + i, (x.to(tl.float32) * 3.0).to(tl.bfloat16))
            tl.store(min_ptr + i, tl.where(x < y, x, y))
            r = tl.arange(0, 16)
            a = tl.load(a_ptr + r[:, None] * 16 + r[None, :]); b = tl.load(b_ptr + r[:, None] * 16 + r[None, :])
            tl.store(dot_ptr + r[:, None] * 16 + r[None, :], tl.dot(a, b))

        g = torch.Generator().manual_seed(0)
        x, y = (torch.randn(64, generator=g).bfloat16() for _ in range(2))
        a, b = (torch.randn(16, 16, generator=g).bfloat16() for _ in range(2))
        out, cast, low = (torch.empty_like(x) for _ in range(3)); dot = torch.empty(16, 16)
        ops[(1,)](x, y, out, cast, low, a, b, dot, 64)
        assert torch.equal(out, x * y + x), "elementwise bf16"
        assert torch.equal(cast, (x.float() * 3).bfloat16()), "fp32 -> bf16 rounds to nearest even"
        assert torch.equal(low, torch.minimum(x, y)), "bf16 comparisons"
        assert torch.allclose(dot, a.float() @ b.float(), rtol=1e-5, atol=1e-5), "bf16 tl.dot"
        print("ok")
    """)
    result = subprocess.run([sys.executable, "-c", kernel], capture_output=True, text=True, cwd=REPO,
                            env={"PYTHONPATH": str(REPO), "TRITON_INTERPRET": "1", "PATH": "/usr/bin:/bin"},
                            timeout=300)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]

