"""How fast can a Triton grouped GEMM run on this GPU, by pointers or by TMA, persistent or not,
warp-specialised or not, against torch's grouped GEMM (CUTLASS on SM90)?

    python3 tools/probes/moe_gemm_engine.py [--size T,E,K,D,F,Z] [--reps 20] [--cpu]

Two GEMM kinds of the routed experts, over routes laid out expert by expert with each
expert's rows padded to a multiple of 128 by zero rows (so a tile never straddles two
experts and a reduction over routes needs no mask):
- ``rows``: C[r, n] = sum_k A[r, k] W[e][n, k] (the forward's down projection, dx; the up
  projection without its gather);
- ``weights``: dW[e][m, n] = sum_r A[r, m] B[r, n] over expert e's rows (the weight gradients).
Each variant is checked against torch's product and timed by CUDA events (median of --reps,
one launch each). ``--cpu`` (with ``TRITON_INTERPRET=1``) checks correctness at a tiny size.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from pytest_nodus.sandbox import triton_interpreter  # noqa: E402

PAD = 128


@triton.jit
def _rows_ptr(a, w, c, tile_expert, tile_row0, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    e = tl.load(tile_expert + tl.program_id(1))
    row0 = tl.load(tile_row0 + tl.program_id(1))
    rows = row0 + tl.arange(0, BM)
    cols = tl.program_id(0) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    w_base = e.to(tl.int64) * N * K
    for k0 in range(0, K, BK):
        lhs = tl.load(a + rows[:, None].to(tl.int64) * K + (k0 + ks)[None, :], mask=(k0 + ks < K)[None, :], other=0.0)
        rhs = tl.load(w + w_base + cols[None, :] * K + (k0 + ks)[:, None],
                      mask=(k0 + ks < K)[:, None] & (cols < N)[None, :], other=0.0)
        acc = tl.dot(lhs, rhs, acc)
    tl.store(c + rows[:, None].to(tl.int64) * N + cols[None, :], acc.to(tl.bfloat16), mask=(cols < N)[None, :])


@triton.jit
def _rows_tma(a_desc, w_desc, c_desc, tile_expert, tile_row0, m_tiles_ptr, N, K, BM: tl.constexpr,
              BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr, PERSISTENT: tl.constexpr,
              WS: tl.constexpr):
    """W as [E * N, K]: a tile past N reads the next expert's rows into columns the store clips."""
    n_tiles = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    if PERSISTENT:
        total = tl.load(m_tiles_ptr) * n_tiles
        for tile in tl.range(tl.program_id(0), total, PROGRAMS, warp_specialize=WS):
            m_idx = tile // n_tiles
            n0 = (tile % n_tiles) * BN
            e = tl.load(tile_expert + m_idx)
            row0 = tl.load(tile_row0 + m_idx)
            acc = tl.zeros((BM, BN), tl.float32)
            for ki in range(k_tiles):
                acc = tl.dot(a_desc.load([row0, ki * BK]), w_desc.load([e * N + n0, ki * BK]).T, acc)
            c_desc.store([row0, n0], acc.to(tl.bfloat16))
    else:
        m_idx = tl.program_id(1)
        n0 = tl.program_id(0) * BN
        e = tl.load(tile_expert + m_idx)
        row0 = tl.load(tile_row0 + m_idx)
        acc = tl.zeros((BM, BN), tl.float32)
        for ki in tl.range(k_tiles, warp_specialize=WS):
            acc = tl.dot(a_desc.load([row0, ki * BK]), w_desc.load([e * N + n0, ki * BK]).T, acc)
        c_desc.store([row0, n0], acc.to(tl.bfloat16))


@triton.jit
def _weights_tma(a_desc, b_desc, dw, expert_start, expert_end, expert_order, M, N, BM: tl.constexpr,
                 BN: tl.constexpr, BK: tl.constexpr, PROGRAMS: tl.constexpr, EXPERTS: tl.constexpr,
                 WS: tl.constexpr):
    """dW[e] = A[rows of e]^T B[rows of e]; persistent over (expert, m, n) tiles, experts in
    ``expert_order`` (heaviest first)."""
    m_tiles = tl.cdiv(M, BM)
    n_tiles = tl.cdiv(N, BN)
    per_expert = m_tiles * n_tiles
    for tile in tl.range(tl.program_id(0), EXPERTS * per_expert, PROGRAMS, warp_specialize=WS):
        e = tl.load(expert_order + tile // per_expert)
        m0 = (tile % per_expert) // n_tiles * BM
        n0 = (tile % n_tiles) * BN
        start = tl.load(expert_start + e)
        end = tl.load(expert_end + e)
        acc = tl.zeros((BM, BN), tl.float32)
        for r0 in range(start, end, BK):
            acc = tl.dot(a_desc.load([r0, m0]).T, b_desc.load([r0, n0]), acc)
        m = m0 + tl.arange(0, BM)
        n = n0 + tl.arange(0, BN)
        out = e.to(tl.int64) * M * N + m[:, None] * N + n[None, :]
        tl.store(dw + out, acc.to(tl.bfloat16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def _weights_ptr(a, b, dw, expert_start, expert_end, expert_order, M, N, BM: tl.constexpr, BN: tl.constexpr,
                 BK: tl.constexpr):
    e = tl.load(expert_order + tl.program_id(2))
    start = tl.load(expert_start + e)
    end = tl.load(expert_end + e)
    m = tl.program_id(1) * BM + tl.arange(0, BM)
    n = tl.program_id(0) * BN + tl.arange(0, BN)
    ks = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for r0 in range(start, end, BK):
        r = (r0 + ks).to(tl.int64)
        lhs = tl.load(a + r[None, :] * M + m[:, None], mask=(m < M)[:, None], other=0.0)
        rhs = tl.load(b + r[:, None] * N + n[None, :], mask=(n < N)[None, :], other=0.0)
        acc = tl.dot(lhs, rhs, acc)
    out = e.to(tl.int64) * M * N + m[:, None] * N + n[None, :]
    tl.store(dw + out, acc.to(tl.bfloat16), mask=(m < M)[:, None] & (n < N)[None, :])


def layout(t, e, k, skew, device, gen):
    """Per-expert route counts (uniform or Zipf-skewed as the environment draws them), each
    padded to a multiple of PAD; the tile table of PAD-row tiles."""
    weights = torch.ones(e) if skew == 0 else 1.0 / torch.arange(1, e + 1, dtype=torch.float64) ** (0.6 * skew)
    counts = torch.multinomial(weights.float(), t * k, replacement=True, generator=gen).bincount(minlength=e)
    padded = (counts + PAD - 1) // PAD * PAD
    ends = torch.cumsum(padded, 0)
    starts = ends - padded
    tile_expert = torch.repeat_interleave(torch.arange(e), padded // PAD)
    tile_row0 = torch.cat([torch.arange(s, s + p, PAD) for s, p in zip(starts.tolist(), padded.tolist())])
    rows = int(ends[-1])
    valid = torch.zeros(rows, dtype=torch.bool)
    for s, c in zip(starts.tolist(), counts.tolist()):
        valid[s:s + c] = True
    to = dict(device=device)
    return (rows, valid.to(**to), counts, starts.to(torch.int32).to(**to), ends.to(torch.int32).to(**to),
            tile_expert.to(torch.int32).to(**to), tile_row0.to(torch.int32).to(**to))


def timed(fn, reps):
    if not torch.cuda.is_available():
        fn()
        return float("nan")
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", default="16384,64,6,2048,1408,2")
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--cpu", action="store_true")
    args = parser.parse_args()
    device = torch.device("cpu" if args.cpu else "cuda")
    if args.cpu:
        triton_interpreter.install()  # the interpreter's bf16 arithmetic, as the sandbox fixes it
    t, e, k, d, f, z = (int(v) for v in args.size.split(","))
    gen = torch.Generator().manual_seed(0)
    rows, valid, counts, starts, ends, tile_expert, tile_row0 = layout(t, e, k, z, device, gen)
    programs = torch.cuda.get_device_properties(0).multi_processor_count if device.type == "cuda" else 4
    m_tiles = torch.tensor([tile_expert.numel()], dtype=torch.int32, device=device)
    order = torch.argsort(counts, descending=True, stable=True).to(torch.int32).to(device)
    bf = dict(dtype=torch.bfloat16, device=device)
    routes = int(counts.sum())
    print(f"size T={t} E={e} K={k} D={d} F={f} Z={z}: {routes} routes, {rows} padded rows "
          f"(+{100 * (rows - routes) / routes:.1f}%), heaviest expert {int(counts.max())}")

    def zero_pad(x):
        return x * valid[:, None].to(x.dtype)

    # rows: o = act W2^T (N = D, K = F) and the up projection's shape (N = F, K = D).
    for label, n, kk in (("rows N=D K=F", d, f), ("rows N=F K=D", f, d)):
        a = zero_pad(torch.randn(rows, kk, **bf))
        w = torch.randn(e, n, kk, **bf) / kk ** 0.5
        flops = 2.0 * routes * n * kk
        want = torch.empty(rows, n, **bf)
        offs = ends.to(torch.int32)

        def grouped():
            return torch._grouped_mm(a, w.transpose(-2, -1), offs=offs)
        results = {}
        if device.type == "cuda":
            results["torch._grouped_mm"] = (grouped, None)
        for bm, bn, bk, warps, stages in ((128, 128, 64, 8, 3),):
            c = torch.empty(rows, n, **bf)
            results[f"pointers {bm}x{bn}x{bk} w{warps} s{stages}"] = (
                lambda c=c, bn=bn, bk=bk, warps=warps, stages=stages: _rows_ptr[(triton.cdiv(n, bn), tile_expert.numel())](
                    a, w, c, tile_expert, tile_row0, n, kk, BM=PAD, BN=bn, BK=bk, num_warps=warps, num_stages=stages), c)
        for bn, bk, warps, stages, persistent, ws in (
                (128, 64, 8, 3, False, False), (128, 64, 8, 4, False, False), (256, 64, 8, 3, False, False),
                (128, 64, 8, 4, True, False), (256, 64, 8, 3, True, False),
                (128, 64, 8, 4, True, True), (256, 64, 8, 3, True, True), (128, 64, 4, 4, True, True),
                (128, 128, 8, 3, True, True)):
            if device.type == "cpu" and (bn > 64 or bk > 32):
                bn, bk = 32, 16
            c = torch.empty(rows, n, **bf)
            a_desc = TensorDescriptor.from_tensor(a, [PAD, bk])
            w_desc = TensorDescriptor.from_tensor(w.view(e * n, kk), [bn, bk])
            c_desc = TensorDescriptor.from_tensor(c, [PAD, bn])
            grid = (programs,) if persistent else (triton.cdiv(n, bn), tile_expert.numel())
            name = f"tma {PAD}x{bn}x{bk} w{warps} s{stages}{' persistent' if persistent else ''}{' ws' if ws else ''}"
            results[name] = (lambda grid=grid, a_desc=a_desc, w_desc=w_desc, c_desc=c_desc, bn=bn, bk=bk, warps=warps,
                             stages=stages, persistent=persistent, ws=ws: _rows_tma[grid](
                a_desc, w_desc, c_desc, tile_expert, tile_row0, m_tiles, n, kk, BM=PAD, BN=bn, BK=bk,
                PROGRAMS=programs, PERSISTENT=persistent, WS=ws, num_warps=warps, num_stages=stages), c)
        ref = grouped() if device.type == "cuda" else None
        if ref is None:
            ref = torch.cat([a[s:t_].float() @ w[i].float().t() for i, (s, t_) in
                             enumerate(zip((ends - (ends - starts)).tolist(), ends.tolist()))]).to(torch.bfloat16)
        report(label, results, ref, valid, flops, args.reps)

    # weights: dW[e] (M = F, N = D) = A^T B over the expert's rows.
    m_, n_ = f, d
    a = zero_pad(torch.randn(rows, m_, **bf))
    b = zero_pad(torch.randn(rows, n_, **bf))
    flops = 2.0 * routes * m_ * n_
    offs = ends.to(torch.int32)

    def grouped_w():
        return torch._grouped_mm(a.t(), b, offs=offs)
    results = {}
    if device.type == "cuda":
        results["torch._grouped_mm"] = (grouped_w, None)
    dw = torch.empty(e, m_, n_, **bf)
    results["pointers 128x128x64 w4 s3"] = (lambda: _weights_ptr[(triton.cdiv(n_, 128), triton.cdiv(m_, 128), e)](
        a, b, dw, starts, ends, order, m_, n_, BM=128, BN=128, BK=64, num_warps=4, num_stages=3), dw)
    for bm, bn, bk, warps, stages, ws in ((128, 128, 64, 4, 3, False), (128, 128, 64, 4, 4, False),
                                          (128, 128, 64, 8, 4, False), (128, 256, 64, 8, 3, False),
                                          (128, 128, 64, 4, 4, True), (128, 128, 64, 8, 4, True),
                                          (128, 256, 64, 8, 3, True)):
        if device.type == "cpu":
            bm, bn, bk = 32, 32, 32
        out = torch.empty(e, m_, n_, **bf)
        a_desc = TensorDescriptor.from_tensor(a, [bk, bm])
        b_desc = TensorDescriptor.from_tensor(b, [bk, bn])
        name = f"tma {bm}x{bn}x{bk} w{warps} s{stages} persistent{' ws' if ws else ''}"
        results[name] = (lambda out=out, a_desc=a_desc, b_desc=b_desc, bm=bm, bn=bn, bk=bk, warps=warps, stages=stages,
                         ws=ws: _weights_tma[(programs,)](
            a_desc, b_desc, out, starts, ends, order, m_, n_, BM=bm, BN=bn, BK=bk, PROGRAMS=programs, EXPERTS=e,
            WS=ws, num_warps=warps, num_stages=stages), out)
    ref = grouped_w() if device.type == "cuda" else torch.stack(
        [a[s:t_].float().t() @ b[s:t_].float() for s, t_ in zip(starts.tolist(), ends.tolist())]).to(torch.bfloat16)
    report("weights M=F N=D", results, ref, None, flops, args.reps)
    return 0


def report(label, results, ref, valid, flops, reps):
    print(f"{label}:")
    for name, (fn, out) in results.items():
        try:
            ms = timed(fn, reps)
        except Exception as exc:  # a variant that fails to compile is reported, not fatal
            print(f"  {name:44s} failed: {type(exc).__name__}: {str(exc).splitlines()[0][:120]}")
            continue
        got = fn() if out is None else out
        got, want = got.float(), ref.float()
        if valid is not None:
            got, want = got[valid], want[valid]
        err = float((got - want).norm() / want.norm())
        print(f"  {name:44s} {ms:8.3f} ms {flops / ms / 1e9:7.1f} TF/s  err {err:.1e}")


if __name__ == "__main__":
    raise SystemExit(main())
