"""Solution for moe_experts: the routed experts forward and backward as grouped GEMMs whose every
operand is loaded by TMA, each a persistent Triton kernel, with SwiGLU and its backward in the
epilogues.

Layout: the routes (token, slot) sorted stably by expert, each expert's run padded with zero
rows to a multiple of BLOCK_M, so a row tile never straddles two experts and a reduction over
an expert's rows needs no mask. ``x`` and ``w * dy`` are gathered once into that order (zero
on padding rows); every product after that reads contiguous tiles, which TMA loads without a
register touching an address. Padding rows stay zero through every product (their x and dy
rows are zero), so they add nothing to a weight gradient. No shape depends on the routing and
nothing waits on the host: buffers have room for the most padding any routing can need
(T*K + E*BLOCK_M rows) and each kernel reads the real tile count on the device.

1. ``_gather``: xg = x[token], dyg = bf16(w * dy[token]) per padded row (the weighted
   gradient rounded once, as torch's autograd rounds it).
2. ``_up``: h1 = xg W1^T and h3 = xg W3^T over the same xg tiles (two accumulators),
   a = silu(h1) * h3 in the epilogue; h1, h3, a kept in bf16.
3. ``_rows`` o = a W2^T; ``_combine_y``: y = sum_k w_k o_k (fp32, slot order) and
   dtopk_weights_k = <o_k, dy>.
4. ``_rows`` da = dyg W2 with SwiGLU's backward in the epilogue (dh1, dh3); ``_rows``
   dx per route = dh1 W1 + dh3 W3 (two products, one accumulator, into o's buffer), summed
   per token by ``_combine_dx``.
5. ``_weights``: per expert, dW1 = dh1^T xg, dW3 = dh3^T xg, dW2 = dyg^T a over its padded
   rows, heaviest expert first; an expert nobody chose writes zeros.

Every product accumulates in fp32 and is rounded to bf16 once, where torch's grouped GEMM
rounds too. Tiles: 128 x 256 where the epilogue is a plain store, 128 x 128 where it holds
more (docs/results/moe_experts.md has the sweep that chose them).
"""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


def _config(device: torch.device) -> dict:
    """Tiles per kernel (BLOCK_M also sets the padding granularity) and the programs of a
    persistent launch (one per SM: the H200's 132, asked of the device where there is one)."""
    if device.type == "cuda":
        # 128 x 256 x 64 on 8 warps, 3 stages: 3 x 48 KiB of operands plus a 64 KiB store
        # tile fit the H200's 227 KiB; the two-accumulator and SwiGLU-backward epilogues take
        # 128 x 128 (4 stages of 32 KiB) to stay within 255 registers.
        wide = dict(BLOCK_N=256, BLOCK_K=64, num_warps=8, num_stages=3)
        narrow = dict(BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)
        return dict(BLOCK_M=128, PROGRAMS=132, up=narrow, o=wide, da=dict(narrow, num_stages=4), dx=wide, weights=wide)
    small = dict(BLOCK_N=16, BLOCK_K=16, num_warps=4, num_stages=1)  # the interpreter
    return dict(BLOCK_M=16, PROGRAMS=4, up=small, o=small, da=small, dx=small, weights=small)


@triton.jit
def _gather(x, dy, route_of_row, weights, rows_used, xg, dyg, D, K: tl.constexpr, BLOCK_D: tl.constexpr):
    """One padded row: its route's token row of x and of dy (the latter times the routing
    weight, rounded to bf16), or zeros on a padding row."""
    p = tl.program_id(0)
    if p >= tl.load(rows_used):
        return
    route = tl.load(route_of_row + p)
    width = tl.where(route >= 0, D, 0)  # a padding row loads nothing
    token = tl.maximum(route, 0).to(tl.int64) // K
    w = tl.load(weights + tl.maximum(route, 0))
    for d0 in range(0, D, BLOCK_D):
        ds = d0 + tl.arange(0, BLOCK_D)
        ok = ds < width
        tl.store(xg + p.to(tl.int64) * D + ds, tl.load(x + token * D + ds, mask=ok, other=0.0), mask=ds < D)
        g = tl.load(dy + token * D + ds, mask=ok, other=0.0).to(tl.float32)
        tl.store(dyg + p.to(tl.int64) * D + ds, (g * w).to(tl.bfloat16), mask=ds < D)


@triton.jit
def _row_tile(tile, n_tiles, tile_expert, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    """A persistent loop's ``tile``: its first row, its first column and its rows' expert.
    Column tiles are the fast axis, so the programs in flight share a row tile and an
    expert's weights."""
    m = tile // n_tiles
    return m * BLOCK_M, tile % n_tiles * BLOCK_N, tl.load(tile_expert + m)


@triton.jit
def _up(xg_d, w1_d, w3_d, h1, h3, act, tile_expert, tiles_used, F, D, BLOCK_M: tl.constexpr,
        BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PROGRAMS: tl.constexpr):
    """h1, h3 = xg W1[e]^T, xg W3[e]^T for a 128-row tile; act = silu(h1) * h3. W as [E*F, D]:
    a column tile past F reads the next expert's rows, into columns the stores mask."""
    n_tiles = tl.cdiv(F, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tl.load(tiles_used) * n_tiles, PROGRAMS):
        row0, n0, e = _row_tile(tile, n_tiles, tile_expert, BLOCK_M, BLOCK_N)
        w_row = e * F + n0
        acc1 = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        acc3 = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(0, D, BLOCK_K):
            a = xg_d.load([row0, k0])
            acc1 = tl.dot(a, w1_d.load([w_row, k0]).T, acc1)
            acc3 = tl.dot(a, w3_d.load([w_row, k0]).T, acc3)
        g = acc1.to(tl.bfloat16).to(tl.float32)
        u = acc3.to(tl.bfloat16).to(tl.float32)
        rows = row0 + tl.arange(0, BLOCK_M)
        cols = n0 + tl.arange(0, BLOCK_N)
        out = rows[:, None].to(tl.int64) * F + cols[None, :]
        mask = (cols < F)[None, :]
        tl.store(h1 + out, g.to(tl.bfloat16), mask=mask)
        tl.store(h3 + out, u.to(tl.bfloat16), mask=mask)
        tl.store(act + out, (g * tl.sigmoid(g) * u).to(tl.bfloat16), mask=mask)


@triton.jit
def _rows(a_d, b_d, a2_d, b2_d, c_d, c, c2, h1, h3, tile_expert, tiles_used, N, K, B_N_MAJOR: tl.constexpr,
          TWO: tl.constexpr, SWIGLU_BACKWARD: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
          BLOCK_K: tl.constexpr, PROGRAMS: tl.constexpr):
    """C[r, n] = sum_k A[r, k] B[e][k, n] (+ A2 B2) over row tiles of expert e.

    B is given as [E*K, N] (K-major rows): a k step past K reads the next expert's rows, where
    A's columns are TMA's zero fill, so nothing adds. B_N_MAJOR: B is given as [E*N, K] (W2 for
    o = act W2^T) and loaded transposed; a column tile past N reads the next expert's rows into
    columns the TMA store clips. Plain: C stored by TMA. SWIGLU_BACKWARD: the product is da;
    the epilogue reads h1, h3 and writes dh1 to ``c``, dh3 to ``c2``."""
    n_tiles = tl.cdiv(N, BLOCK_N)
    for tile in tl.range(tl.program_id(0), tl.load(tiles_used) * n_tiles, PROGRAMS):
        row0, n0, e = _row_tile(tile, n_tiles, tile_expert, BLOCK_M, BLOCK_N)
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for k0 in range(0, K, BLOCK_K):
            a = a_d.load([row0, k0])  # A's tile first: both tiles then share one barrier
            if B_N_MAJOR:
                b = b_d.load([e * N + n0, k0]).T
            else:
                b = b_d.load([e * K + k0, n0])
            acc = tl.dot(a, b, acc)
        if TWO:
            for k0 in range(0, K, BLOCK_K):
                acc = tl.dot(a2_d.load([row0, k0]), b2_d.load([e * K + k0, n0]), acc)
        if SWIGLU_BACKWARD:
            rows = row0 + tl.arange(0, BLOCK_M)
            cols = n0 + tl.arange(0, BLOCK_N)
            out = rows[:, None].to(tl.int64) * N + cols[None, :]
            mask = (cols < N)[None, :]
            da = acc.to(tl.bfloat16).to(tl.float32)
            g = tl.load(h1 + out, mask=mask, other=0.0).to(tl.float32)
            u = tl.load(h3 + out, mask=mask, other=0.0).to(tl.float32)
            sig = tl.sigmoid(g)
            tl.store(c + out, (da * u * sig * (1.0 + g * (1.0 - sig))).to(tl.bfloat16), mask=mask)
            tl.store(c2 + out, (da * g * sig).to(tl.bfloat16), mask=mask)
        else:
            c_d.store([row0, n0], acc.to(tl.bfloat16))


@triton.jit
def _weights(a_d, b_d, dw, row_start, row_end, expert_order, M, N, EXPERTS, BLOCK_M: tl.constexpr,
             BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, PROGRAMS: tl.constexpr):
    """dw[e] = A[rows of e]^T B[rows of e], [M, N] per expert; tiles expert by expert in
    ``expert_order`` (heaviest first: a tile's work is its expert's row count)."""
    m_tiles = tl.cdiv(M, BLOCK_M)
    n_tiles = tl.cdiv(N, BLOCK_N)
    per_expert = m_tiles * n_tiles
    for tile in tl.range(tl.program_id(0), EXPERTS * per_expert, PROGRAMS):
        e = tl.load(expert_order + tile // per_expert)
        m0 = tile % per_expert // n_tiles * BLOCK_M
        n0 = tile % n_tiles * BLOCK_N
        acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
        for r0 in range(tl.load(row_start + e), tl.load(row_end + e), BLOCK_K):
            acc = tl.dot(a_d.load([r0, m0]).T, b_d.load([r0, n0]), acc)
        m = m0 + tl.arange(0, BLOCK_M)
        n = n0 + tl.arange(0, BLOCK_N)
        out = e.to(tl.int64) * M * N + m[:, None] * N + n[None, :]
        tl.store(dw + out, acc.to(tl.bfloat16), mask=(m < M)[:, None] & (n < N)[None, :])


@triton.jit
def _combine_y(o, dy, weights, row_of_route, y, dweights, D, K: tl.constexpr, BLOCK_D: tl.constexpr):
    """Per token: y = sum_k w_k o_k (fp32, slot order: deterministic) and dweights_k = <o_k, dy>."""
    t = tl.program_id(0).to(tl.int64)
    for d0 in range(0, D, BLOCK_D):
        ds = d0 + tl.arange(0, BLOCK_D)
        ok = ds < D
        g = tl.load(dy + t * D + ds, mask=ok, other=0.0).to(tl.float32)
        y_acc = tl.zeros((BLOCK_D,), tl.float32)
        for k in range(K):
            r = tl.load(row_of_route + t * K + k).to(tl.int64)
            out = tl.load(o + r * D + ds, mask=ok, other=0.0).to(tl.float32)
            y_acc += tl.load(weights + t * K + k) * out
            tl.atomic_add(dweights + t * K + k, tl.sum(out * g, 0))  # the token's own slot: one program per token
        tl.store(y + t * D + ds, y_acc.to(tl.bfloat16), mask=ok)


@triton.jit
def _combine_dx(dx_route, row_of_route, dx, D, K: tl.constexpr, BLOCK_D: tl.constexpr):
    t = tl.program_id(0).to(tl.int64)
    for d0 in range(0, D, BLOCK_D):
        ds = d0 + tl.arange(0, BLOCK_D)
        acc = tl.zeros((BLOCK_D,), tl.float32)
        for k in range(K):
            r = tl.load(row_of_route + t * K + k).to(tl.int64)
            acc += tl.load(dx_route + r * D + ds, mask=ds < D, other=0.0).to(tl.float32)
        tl.store(dx + t * D + ds, acc.to(tl.bfloat16), mask=ds < D)


def _routes(topk_ids: torch.Tensor, experts: int, block_m: int, capacity: int):
    """The padded layout, made on the device: each padded row's route (-1 on padding), each
    route's row, each expert's first and end row, each row tile's expert, the rows and tiles
    in use (one-element tensors: the host never reads them)."""
    t, k = topk_ids.shape
    device = topk_ids.device
    flat = topk_ids.reshape(-1).long()
    by_expert, order = torch.sort(flat, stable=True)
    # Each expert's run of the sorted routes, found by search: bincount would wait for the
    # device to size its output, and every launch after it would then show in the call's time.
    bounds = torch.searchsorted(by_expert, torch.arange(experts + 1, device=device))
    counts = bounds[1:] - bounds[:-1]
    padded = (counts + block_m - 1) // block_m * block_m
    row_end = torch.cumsum(padded, 0)
    row_start = row_end - padded
    row_of_sorted = row_start[by_expert] + torch.arange(t * k, device=device) - bounds[:-1][by_expert]
    route_of_row = torch.full((capacity,), -1, dtype=torch.int32, device=device)
    route_of_row[row_of_sorted] = order.to(torch.int32)
    row_of_route = torch.empty(t * k, dtype=torch.int32, device=device)
    row_of_route[order] = row_of_sorted.to(torch.int32)
    tile_row0 = torch.arange(capacity // block_m, device=device) * block_m
    tile_expert = torch.searchsorted(row_end, tile_row0, right=True).clamp_(max=experts - 1)
    # Heaviest experts first in the weight gradients: skewed routing gives one expert up to
    # T routes against T K / E on average (16x at E=128, K=8); launched last, its tiles would
    # run alone after every other.
    heaviest = torch.argsort(counts, descending=True, stable=True)
    used = row_end[-1:]
    return (route_of_row, row_of_route, row_start.to(torch.int32), row_end.to(torch.int32),
            tile_expert.to(torch.int32), used.to(torch.int32), (used // block_m).to(torch.int32),
            heaviest.to(torch.int32))


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    t, d = x.shape
    k = topk_ids.shape[1]
    experts, f, _ = w1.shape
    # TMA needs 16-byte row strides: every width the environment draws is a multiple of 8.
    assert d % 8 == 0 and f % 8 == 0, "D and F must be multiples of 8 for TMA"
    cfg = _config(x.device)
    bm, programs = cfg["BLOCK_M"], cfg["PROGRAMS"]
    if x.is_cuda:
        programs = torch.cuda.get_device_properties(x.device).multi_processor_count
    capacity = t * k + experts * bm  # every expert's padding at its worst
    route_of_row, row_of_route, row_start, row_end, tile_expert, rows_used, tiles_used, heaviest = \
        _routes(topk_ids, experts, bm, capacity)
    x, dy, w1, w3, w2 = (v.contiguous() for v in (x, dy, w1, w3, w2))
    weights = topk_weights.float().contiguous()
    bf16 = dict(dtype=torch.bfloat16, device=x.device)
    block_d = min(triton.next_power_of_2(d), 1024)

    def desc(tensor, rows, cols):
        return TensorDescriptor.from_tensor(tensor, [rows, cols])

    def persistent(kernel, name, *args, **flags):
        c = cfg[name]
        kernel[(programs,)](*args, BLOCK_M=bm, PROGRAMS=programs, **flags, **c)

    xg, dyg = torch.empty(capacity, d, **bf16), torch.empty(capacity, d, **bf16)
    _gather[(capacity,)](x, dy, route_of_row, weights, rows_used, xg, dyg, d, K=k, BLOCK_D=block_d)

    h1, h3, act = (torch.empty(capacity, f, **bf16) for _ in range(3))
    up = cfg["up"]
    persistent(_up, "up", desc(xg, bm, up["BLOCK_K"]), desc(w1.view(-1, d), up["BLOCK_N"], up["BLOCK_K"]),
               desc(w3.view(-1, d), up["BLOCK_N"], up["BLOCK_K"]), h1, h3, act, tile_expert, tiles_used, f, d)

    # o = act W2^T: W2[e] is [D, F], N-major rows.
    rows_d = torch.empty(capacity, d, **bf16)  # o, then dx per route
    c = cfg["o"]
    a, b, out = desc(act, bm, c["BLOCK_K"]), desc(w2.view(-1, f), c["BLOCK_N"], c["BLOCK_K"]), desc(rows_d, bm, c["BLOCK_N"])
    persistent(_rows, "o", a, b, a, b, out, rows_d, rows_d, act, act, tile_expert, tiles_used, d, f, B_N_MAJOR=True,
               TWO=False, SWIGLU_BACKWARD=False)
    y = torch.empty_like(x)
    dweights = torch.zeros(t, k, dtype=torch.float32, device=x.device)
    _combine_y[(t,)](rows_d, dy, weights, row_of_route, y, dweights, d, K=k, BLOCK_D=block_d)

    # da = dyg W2: B[e] = W2[e] as [K = D, N = F]; SwiGLU's backward in the epilogue.
    dh1, dh3 = torch.empty_like(h1), torch.empty_like(h3)
    c = cfg["da"]
    b = desc(w2.view(-1, f), c["BLOCK_K"], c["BLOCK_N"])
    persistent(_rows, "da", desc(dyg, bm, c["BLOCK_K"]), b, desc(dyg, bm, c["BLOCK_K"]), b,
               desc(dh1, bm, c["BLOCK_N"]), dh1, dh3, h1, h3, tile_expert, tiles_used, f, d, B_N_MAJOR=False,
               TWO=False, SWIGLU_BACKWARD=True)
    # dx per route = dh1 W1 + dh3 W3: B[e] = W1[e] as [K = F, N = D].
    c = cfg["dx"]
    persistent(_rows, "dx", desc(dh1, bm, c["BLOCK_K"]), desc(w1.view(-1, d), c["BLOCK_K"], c["BLOCK_N"]),
               desc(dh3, bm, c["BLOCK_K"]), desc(w3.view(-1, d), c["BLOCK_K"], c["BLOCK_N"]),
               desc(rows_d, bm, c["BLOCK_N"]), rows_d, rows_d, h1, h3, tile_expert, tiles_used, d, f, B_N_MAJOR=False,
               TWO=True, SWIGLU_BACKWARD=False)
    dx = torch.empty_like(x)
    _combine_dx[(t,)](rows_d, row_of_route, dx, d, K=k, BLOCK_D=block_d)

    dw1, dw3, dw2 = torch.empty_like(w1), torch.empty_like(w3), torch.empty_like(w2)
    c = cfg["weights"]

    def per_expert(a, b, dw, m, n):
        persistent(_weights, "weights", desc(a, c["BLOCK_K"], bm), desc(b, c["BLOCK_K"], c["BLOCK_N"]), dw,
                   row_start, row_end, heaviest, m, n, experts)

    per_expert(dh1, xg, dw1, f, d)
    per_expert(dh3, xg, dw3, f, d)
    per_expert(dyg, act, dw2, d, f)
    return y, dx, dw1, dw3, dw2, dweights
