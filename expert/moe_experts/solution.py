"""Solution for moe_experts: the routed experts forward and backward in eight launches of four
Triton kernels, each gathering its rows where it loads them, none padding a group or copying
a token.

The routes (token, slot) are sorted stably by expert on the device; an expert's routes are a
contiguous run of that order, cut into tiles of BLOCK_M rows (a tile never straddles two
experts). No shape depends on the routing and nothing waits on the host: the tile table has
room for the most tiles any routing can make (cdiv(T*K, BLOCK_M) + E) and a tile past the
last real one returns at once.

1. ``_up``: each tile's tokens gathered from ``x`` once for both W1 and W3 (two accumulators
   over the same loads), SwiGLU in the epilogue; h1, h3 and a = silu(h1) * h3 kept in bf16
   for the backward.
2. ``_rows`` (forward): o = a W2^T per route, bf16, in route order.
3. ``_combine``: per token, y = sum_k w_k o_k in fp32 (a fixed order: deterministic, no
   atomics) and dtopk_weights = <o_k, dy>.
4. ``_rows`` (backward): da = (w dy[token]) W2, the weighting and the gather done as the rows
   load, SwiGLU's backward in the epilogue (dh1, dh3); then dx per route = dh1 W1 + dh3 W3
   (two products into one accumulator), summed per token by ``_combine``.
5. ``_weights``: per expert, dW2 = (w dy)^T a, dW1 = dh1^T x, dW3 = dh3^T x over its own
   routes; an expert nobody chose writes zeros.

Every product accumulates in fp32 and is rounded to bf16 once, where torch's grouped GEMM
rounds too (h1, h3, a, o, dO, da's products, the weight gradients).
"""

import torch
import triton
import triton.language as tl


def _config(device: torch.device) -> dict:
    """Tiles per kernel. BLOCK_M is every route-tile kernel's (it cuts the tile table); the
    weight gradients tile their own (F, D) outputs and step over routes. ``TMA`` (weights by
    tensor descriptors) stays off unless a sweep on the H200 finds it faster
    (docs/results/moe_experts.md); ``HEAVY_FIRST`` (default on) launches the weight-gradient
    tiles of the experts with the most routes first."""
    if device.type == "cuda":
        # The fastest of the tiles tried per kernel (docs/results/moe_experts.md). _up keeps
        # two 128 x 128 accumulators (W1's and W3's) over the same x loads; da's epilogue
        # also holds h1 and h3, so a narrower tile; 4 stages of 128 x 128 x 64 for two
        # operands overflow the H200's 227 KiB of shared memory.
        gemm = dict(BLOCK_N=128, BLOCK_K=64, num_warps=8, num_stages=3)
        return dict(BLOCK_M=128, up=gemm, o=gemm, da=dict(gemm, BLOCK_N=64), dx=gemm,
                    weights=dict(gemm, BLOCK_M=128, num_warps=4))
    small = dict(BLOCK_N=16, BLOCK_K=16, num_warps=4, num_stages=1)  # the interpreter
    return dict(BLOCK_M=16, up=small, o=small, da=small, dx=small, weights=dict(small, BLOCK_M=16))


@triton.jit
def _tile(tile_expert, tile_row0, expert_end, pid):
    e = tl.load(tile_expert + pid)
    return e, tl.load(tile_row0 + pid), tl.load(expert_end + e)


@triton.jit
def _weight_tiles(w, rows, cols, BLOCK_ROWS: tl.constexpr, BLOCK_COLS: tl.constexpr):
    """Every expert's weights as one [rows, cols] matrix, loaded by TMA in tiles. A tile that
    runs past its expert's last row reads the next expert's (finite, and only into columns
    or k-steps the product masks out); past the last expert's it reads zeros."""
    return tl.make_tensor_descriptor(w, shape=[rows, cols], strides=[cols, 1], block_shape=[BLOCK_ROWS, BLOCK_COLS])


@triton.jit
def _up(x, route_token, route_weight, w1, w3, h1, h3, act, act_weighted, tile_expert, tile_row0, expert_end, D, F,
        EXPERTS, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TMA: tl.constexpr):
    e, row0, row_end = _tile(tile_expert, tile_row0, expert_end, tl.program_id(1))
    if row0 >= row_end:
        return
    rows = row0 + tl.arange(0, BLOCK_M)
    row_ok = rows < row_end
    token = tl.load(route_token + rows, mask=row_ok, other=0).to(tl.int64)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < F
    ks = tl.arange(0, BLOCK_K)
    acc1 = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    acc3 = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    w_base = e.to(tl.int64) * F * D
    if TMA:
        d1, d3 = _weight_tiles(w1, EXPERTS * F, D, BLOCK_N, BLOCK_K), _weight_tiles(w3, EXPERTS * F, D, BLOCK_N, BLOCK_K)
    for k0 in range(0, D, BLOCK_K):
        k_ok = k0 + ks < D
        a = tl.load(x + token[:, None] * D + (k0 + ks)[None, :], mask=row_ok[:, None] & k_ok[None, :], other=0.0)
        if TMA:
            b1 = d1.load([e * F + tl.program_id(0) * BLOCK_N, k0]).T
            b3 = d3.load([e * F + tl.program_id(0) * BLOCK_N, k0]).T
        else:
            wmask = k_ok[:, None] & col_ok[None, :]
            b1 = tl.load(w1 + w_base + cols[None, :] * D + (k0 + ks)[:, None], mask=wmask, other=0.0)
            b3 = tl.load(w3 + w_base + cols[None, :] * D + (k0 + ks)[:, None], mask=wmask, other=0.0)
        acc1 = tl.dot(a, b1, acc1)
        acc3 = tl.dot(a, b3, acc3)
    g = acc1.to(tl.bfloat16).to(tl.float32)
    u = acc3.to(tl.bfloat16).to(tl.float32)
    out = rows[:, None].to(tl.int64) * F + cols[None, :]
    mask = row_ok[:, None] & col_ok[None, :]
    tl.store(h1 + out, g.to(tl.bfloat16), mask=mask)
    tl.store(h3 + out, u.to(tl.bfloat16), mask=mask)
    a = (g * tl.sigmoid(g) * u).to(tl.bfloat16)
    tl.store(act + out, a, mask=mask)
    w = tl.load(route_weight + rows, mask=row_ok, other=0.0)
    tl.store(act_weighted + out, (a.to(tl.float32) * w[:, None]).to(tl.bfloat16), mask=mask)


@triton.jit
def _rows(a, a_token, a_weight, b, a2, b2, c, c2, h1, h3, tile_expert, tile_row0, expert_end, N, K, EXPERTS,
          b_stride_n, b_stride_k, GATHER: tl.constexpr, TWO: tl.constexpr, SWIGLU_BACKWARD: tl.constexpr,
          BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, TMA: tl.constexpr,
          B_KN: tl.constexpr):
    """c[r, n] = sum_k A[r, k] B[e][n, k] (+ A2[r, k] B2[e][n, k]) over a tile of expert e's
    routes r. GATHER: A's row r is a[token[r]] and the product is scaled by weight[r] in the
    epilogue (the routing weight commutes with the product, so the rows go from memory to
    the tensor cores untouched). With SWIGLU_BACKWARD the product is da and the epilogue
    writes dh1 to c and dh3 to c2."""
    e, row0, row_end = _tile(tile_expert, tile_row0, expert_end, tl.program_id(1))
    if row0 >= row_end:
        return
    rows = row0 + tl.arange(0, BLOCK_M)
    row_ok = rows < row_end
    if GATHER:
        a_rows = tl.load(a_token + rows, mask=row_ok, other=0).to(tl.int64)
    else:
        a_rows = rows.to(tl.int64)
    cols = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    col_ok = cols < N
    ks = tl.arange(0, BLOCK_K)
    b_base = e.to(tl.int64) * N * K
    n0 = tl.program_id(0) * BLOCK_N
    if TMA:  # B[e] is [N, K] (b_stride_k == 1) or [K, N] (B_KN: b_stride_n == 1), experts stacked
        if B_KN:
            db, db2 = _weight_tiles(b, EXPERTS * K, N, BLOCK_K, BLOCK_N), _weight_tiles(b2, EXPERTS * K, N, BLOCK_K, BLOCK_N)
        else:
            db, db2 = _weight_tiles(b, EXPERTS * N, K, BLOCK_N, BLOCK_K), _weight_tiles(b2, EXPERTS * N, K, BLOCK_N, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for k0 in range(0, K, BLOCK_K):
        k_ok = k0 + ks < K
        amask = row_ok[:, None] & k_ok[None, :]
        bmask = k_ok[:, None] & col_ok[None, :]
        lhs = tl.load(a + a_rows[:, None] * K + (k0 + ks)[None, :], mask=amask, other=0.0)
        if TMA:
            # Past K (into the next expert's rows) the lhs columns are zeros: nothing adds.
            rhs = db.load([e * K + k0, n0]) if B_KN else db.load([e * N + n0, k0]).T
        else:
            rhs = tl.load(b + b_base + cols[None, :] * b_stride_n + (k0 + ks)[:, None] * b_stride_k, mask=bmask,
                          other=0.0)
        acc = tl.dot(lhs, rhs, acc)
        if TWO:
            lhs2 = tl.load(a2 + a_rows[:, None] * K + (k0 + ks)[None, :], mask=amask, other=0.0)
            if TMA:
                rhs2 = db2.load([e * K + k0, n0]) if B_KN else db2.load([e * N + n0, k0]).T
            else:
                rhs2 = tl.load(b2 + b_base + cols[None, :] * b_stride_n + (k0 + ks)[:, None] * b_stride_k,
                               mask=bmask, other=0.0)
            acc = tl.dot(lhs2, rhs2, acc)
    out = rows[:, None].to(tl.int64) * N + cols[None, :]
    mask = row_ok[:, None] & col_ok[None, :]
    if GATHER:
        acc = acc * tl.load(a_weight + rows, mask=row_ok, other=0.0)[:, None]
    if SWIGLU_BACKWARD:
        da = acc.to(tl.bfloat16).to(tl.float32)
        g = tl.load(h1 + out, mask=mask, other=0.0).to(tl.float32)
        u = tl.load(h3 + out, mask=mask, other=0.0).to(tl.float32)
        sig = tl.sigmoid(g)
        tl.store(c + out, (da * u * sig * (1.0 + g * (1.0 - sig))).to(tl.bfloat16), mask=mask)
        tl.store(c2 + out, (da * g * sig).to(tl.bfloat16), mask=mask)
    else:
        tl.store(c + out, acc.to(tl.bfloat16), mask=mask)


@triton.jit
def _combine(o, dx_route, dy, weights, route_pos, y, dx, dweights, D, K: tl.constexpr, BLOCK_D: tl.constexpr):
    """Per token: y = sum_k w_k o_k, dx = sum_k dx_k (fp32, slot order), dweights_k = <o_k, dy>."""
    t = tl.program_id(0).to(tl.int64)
    for d0 in range(0, D, BLOCK_D):
        ds = d0 + tl.arange(0, BLOCK_D)
        ok = ds < D
        g = tl.load(dy + t * D + ds, mask=ok, other=0.0).to(tl.float32)
        y_acc = tl.zeros((BLOCK_D,), tl.float32)
        dx_acc = tl.zeros((BLOCK_D,), tl.float32)
        for k in range(K):
            r = tl.load(route_pos + t * K + k).to(tl.int64)
            w = tl.load(weights + t * K + k)
            out = tl.load(o + r * D + ds, mask=ok, other=0.0).to(tl.float32)
            y_acc += w * out
            dx_acc += tl.load(dx_route + r * D + ds, mask=ok, other=0.0).to(tl.float32)
            tl.atomic_add(dweights + t * K + k, tl.sum(out * g, 0))  # the token's own slot: one program per token
        tl.store(y + t * D + ds, y_acc.to(tl.bfloat16), mask=ok)
        tl.store(dx + t * D + ds, dx_acc.to(tl.bfloat16), mask=ok)


@triton.jit
def _weights(a, a_token, b, b_token, dw, expert_start, expert_end, expert_order, N1, N2,
             GATHER_A: tl.constexpr, GATHER_B: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    """dw[e][n1, n2] = sum over expert e's routes r of A[r, n1] B[r, n2]. GATHER_A: A's row r is
    a[token[r]] (dy); GATHER_B: B's row r is b[token[r]] (x). The grid's slow axis walks the
    experts in ``expert_order``."""
    e = tl.load(expert_order + tl.program_id(2))
    start = tl.load(expert_start + e)
    end = tl.load(expert_end + e)
    m = tl.program_id(1) * BLOCK_M + tl.arange(0, BLOCK_M)
    n = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    m_ok = m < N1
    n_ok = n < N2
    ks = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), tl.float32)
    for r0 in range(start, end, BLOCK_K):
        r = r0 + ks
        r_ok = r < end
        if GATHER_A:
            a_rows = tl.load(a_token + r, mask=r_ok, other=0).to(tl.int64)
        else:
            a_rows = r.to(tl.int64)
        if GATHER_B:
            b_rows = tl.load(b_token + r, mask=r_ok, other=0).to(tl.int64)
        else:
            b_rows = r.to(tl.int64)
        lhs = tl.load(a + a_rows[None, :] * N1 + m[:, None], mask=m_ok[:, None] & r_ok[None, :], other=0.0)
        rhs = tl.load(b + b_rows[:, None] * N2 + n[None, :], mask=r_ok[:, None] & n_ok[None, :], other=0.0)
        acc = tl.dot(lhs, rhs, acc)
    out = e.to(tl.int64) * N1 * N2 + m[:, None] * N2 + n[None, :]
    tl.store(dw + out, acc.to(tl.bfloat16), mask=m_ok[:, None] & n_ok[None, :])


def _routes(topk_ids: torch.Tensor, experts: int, block_m: int):
    """Route order by expert and the tile table, all on the device."""
    t, k = topk_ids.shape
    flat = topk_ids.reshape(-1).long()
    by_expert, order = torch.sort(flat, stable=True)
    # Each expert's run of the sorted routes, found by search: bincount would wait for the
    # device to size its output, and every launch after it would then show in the call's time.
    bounds = torch.searchsorted(by_expert, torch.arange(experts + 1, device=flat.device))
    starts, ends = bounds[:-1], bounds[1:]
    counts = ends - starts
    tiles = (counts + block_m - 1) // block_m
    tile_ends = torch.cumsum(tiles, 0)
    capacity = triton.cdiv(t * k, block_m) + experts
    tile = torch.arange(capacity, device=flat.device)
    expert = torch.searchsorted(tile_ends, tile, right=True).clamp_(max=experts - 1)
    row0 = starts[expert] + (tile - (tile_ends - tiles)[expert]) * block_m
    row0 = torch.where(tile < tile_ends[-1], row0, ends[expert])  # past the last tile: empty
    position = torch.empty_like(order)
    position[order] = torch.arange(order.numel(), device=flat.device)
    return (order, (order // k).to(torch.int32), position.to(torch.int32), starts.to(torch.int32),
            ends.to(torch.int32), expert.to(torch.int32), row0.to(torch.int32))


def kernel(x, topk_ids, topk_weights, w1, w3, w2, dy):
    t, d = x.shape
    k = topk_ids.shape[1]
    experts, f, _ = w1.shape
    cfg = _config(x.device)
    bm = cfg["BLOCK_M"]
    order, token, position, starts, ends, tile_expert, tile_row0 = _routes(topk_ids, experts, bm)
    # Heaviest experts first: a weight-gradient tile's work is its expert's route count, and
    # skewed routing gives one expert up to T routes against T K / E on average (16x at
    # E=128, K=8). Launched last, that expert's tiles would run alone after every other.
    if cfg.get("HEAVY_FIRST", True):
        expert_order = torch.argsort(ends - starts, descending=True, stable=True).to(torch.int32)
    else:
        expert_order = torch.arange(experts, dtype=torch.int32, device=x.device)
    weight = topk_weights.reshape(-1)[order].float().contiguous()
    routes = t * k
    tiles = tile_expert.numel()
    x, dy, w1, w3, w2 = (v.contiguous() for v in (x, dy, w1, w3, w2))
    table = (tile_expert, tile_row0, ends)
    tma = cfg.get("TMA", False)
    if tma and x.is_cuda:
        # A descriptor made inside a kernel lives in global scratch that Triton asks for.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=x.device))

    def over_routes(kernel, name, n, *args, **flags):
        # Columns on the grid's fast axis: the programs in flight share a tile of rows (read
        # once from HBM, then from L2) and their expert's weights.
        kernel[(triton.cdiv(n, cfg[name]["BLOCK_N"]), tiles)](*args, BLOCK_M=bm, TMA=tma, **flags, **cfg[name])

    h1, h3, act, act_weighted = (torch.empty(routes, f, dtype=torch.bfloat16, device=x.device) for _ in range(4))
    over_routes(_up, "up", f, x, token, weight, w1, w3, h1, h3, act, act_weighted, *table, d, f, experts)
    o = torch.empty(routes, d, dtype=torch.bfloat16, device=x.device)
    over_routes(_rows, "o", d, act, token, weight, w2, act, w2, o, o, h1, h3, *table, d, f, experts, f, 1,
                GATHER=False, TWO=False, SWIGLU_BACKWARD=False, B_KN=False)
    # da = w (dy[token] W2): B[e][n = f, k = d] is w2[e][d, f]; SwiGLU's backward in the epilogue.
    dh1, dh3 = torch.empty_like(h1), torch.empty_like(h3)
    over_routes(_rows, "da", f, dy, token, weight, w2, dy, w2, dh1, dh3, h1, h3, *table, f, d, experts, 1, f,
                GATHER=True, TWO=False, SWIGLU_BACKWARD=True, B_KN=True)
    # dx per route = dh1 W1 + dh3 W3: B[e][n = d, k = f] is w1[e][f, d].
    dx_route = torch.empty(routes, d, dtype=torch.bfloat16, device=x.device)
    over_routes(_rows, "dx", d, dh1, token, weight, w1, dh3, w3, dx_route, dx_route, h1, h3, *table, d, f, experts,
                1, d, GATHER=False, TWO=True, SWIGLU_BACKWARD=False, B_KN=True)

    y = torch.empty_like(x)
    dx = torch.empty_like(x)
    dweights = torch.zeros(t, k, dtype=torch.float32, device=x.device)
    _combine[(t,)](o, dx_route, dy, topk_weights.float().contiguous(), position, y, dx, dweights, d, K=k,
                   BLOCK_D=min(triton.next_power_of_2(d), 1024))

    dw1, dw3, dw2 = torch.empty_like(w1), torch.empty_like(w3), torch.empty_like(w2)
    wt = cfg["weights"]

    def per_expert(a, a_token, b, b_token, dw, n1, n2, **gather):
        # The expert on the grid's slow axis: its routes' rows stay in L2 while its tiles run.
        grid = (triton.cdiv(n2, wt["BLOCK_N"]), triton.cdiv(n1, wt["BLOCK_M"]), experts)
        _weights[grid](a, a_token, b, b_token, dw, starts, ends, expert_order, n1, n2, **gather, **wt)

    per_expert(dh1, token, x, token, dw1, f, d, GATHER_A=False, GATHER_B=True)
    per_expert(dh3, token, x, token, dw3, f, d, GATHER_A=False, GATHER_B=True)
    # dW2 = (w dy[token])^T a = dy[token]^T (w a): the weight rides on a, stored weighted by _up.
    per_expert(dy, token, act_weighted, token, dw2, d, f, GATHER_A=True, GATHER_B=False)
    return y, dx, dw1, dw3, dw2, dweights
