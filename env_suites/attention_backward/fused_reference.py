"""attention_backward's fp32 references (the inputs' forward and the gradients) as Triton
kernels, their products on tensor cores, exactly.

The grader's process runs them (never a sandbox), on a GPU only, each checked against the
plain fp32 reference (``reference.py``) at each new shape's first call
(``exact_products.cross_checked``). The unfused paths make and read ``[Hq, rows, keys]``
scores in elementwise passes; here every score stays in registers.

Visibility as ``reference.py``: row i sees key j iff ``max(start_i, i - W + 1) <= j <= i``
(``start_i`` its document's first token; no lower window bound for ``W < 0``). Exactness as
chunked_prefill's fused reference: bf16 operands as they are (``Q K^T``, ``dO V^T``), fp32
intermediates (P, dS) in three bf16 pieces (``exact_kernels.pieces_dot``), softmax
statistics in fp32. The backward takes its own row statistics (``_rows`` without the
output) and ``delta = rowsum(dO * o)`` from the given bf16 ``o``, as the plain one does.

Kernels: ``_rows`` (per query block and query head: online softmax, o and lse), ``_dq`` (per
query block and query head: every visible key), ``_dkdv`` (per key block and KV head: every
query head of the group and every query that sees the block, so dK and dV come out summed
over the group).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from pytest_nodus.grader.exact_kernels import pieces_dot

# The grader's references on a GPU take this path, each checked against the plain one at every
# new shape's first call (exact_products.cross_checked): where they disagree, or this path
# fails, the plain one answers.
ON_CUDA = True


@triton.jit
def _visible(rows, starts, keys, T, window):
    """[rows, keys]: the key is in the row's document (``starts``: each row's first token), at
    or before the row, inside its window."""
    seen = (keys[None, :] <= rows[:, None]) & (keys[None, :] >= starts[:, None]) & (keys[None, :] < T)
    return seen & ((window <= 0) | (rows[:, None] - keys[None, :] < window))


@triton.jit
def _first_key(start_ptr, m0, window):
    """The lowest key any row of the block from ``m0`` sees: its first row's bound is the lowest."""
    lo = tl.load(start_ptr + m0)
    if window > 0:
        lo = tl.maximum(lo, m0 - window + 1)
    return lo


# Head counts and the window are runtime arguments, only the head dim and tiles compile in: a
# grade's fuzzed sizes draw new head counts, and each new constexpr value would compile every
# kernel again inside the grade.
@triton.jit
def _rows(q_ptr, k_ptr, v_ptr, start_ptr, o_ptr, lse_ptr, T, window, scale, HQ, HKV,
          D: tl.constexpr, WITH_O: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    m0 = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1)
    kv_head = head // (HQ // HKV)
    rows = m0 + tl.arange(0, BLOCK_M)
    live = rows < T
    d = tl.arange(0, D)
    q = tl.load(q_ptr + (rows[:, None].to(tl.int64) * HQ + head) * D + d[None, :], mask=live[:, None], other=0.0)
    starts = tl.load(start_ptr + rows, mask=live, other=0)
    top = tl.full([BLOCK_M], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for n0 in range(_first_key(start_ptr, m0, window), tl.minimum(m0 + BLOCK_M, T), BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        where = (keys[:, None].to(tl.int64) * HKV + kv_head) * D + d[None, :]
        k = tl.load(k_ptr + where, mask=(keys < T)[:, None], other=0.0)
        seen = _visible(rows, starts, keys, T, window)
        scores = tl.where(seen, tl.dot(q, tl.trans(k)) * scale, float("-inf"))
        new_top = tl.maximum(top, tl.max(scores, 1))
        # A row may see nothing in a block (its document or window starts later): no -inf - -inf.
        safe = tl.where(new_top == float("-inf"), 0.0, new_top)
        rescale = tl.exp(top - safe)
        p = tl.exp(scores - safe[:, None])
        total = total * rescale + tl.sum(p, 1)
        if WITH_O:
            v = tl.load(v_ptr + where, mask=(keys < T)[:, None], other=0.0)
            acc = acc * rescale[:, None] + pieces_dot(p, v)
        top = new_top
    total = tl.where(live, total, 1.0)  # a row past T may see no key: nothing to log or divide
    tl.store(lse_ptr + head * T + rows, top + tl.log(total), mask=live)
    if WITH_O:
        tl.store(o_ptr + (rows[:, None].to(tl.int64) * HQ + head) * D + d[None, :], acc / total[:, None],
                 mask=live[:, None])


@triton.jit
def _dq(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, start_ptr, dq_ptr, T, window, scale, HQ, HKV,
        D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    m0 = tl.program_id(0) * BLOCK_M
    head = tl.program_id(1)
    kv_head = head // (HQ // HKV)
    rows = m0 + tl.arange(0, BLOCK_M)
    live = rows < T
    d = tl.arange(0, D)
    own = (rows[:, None].to(tl.int64) * HQ + head) * D + d[None, :]
    q = tl.load(q_ptr + own, mask=live[:, None], other=0.0)
    do = tl.load(do_ptr + own, mask=live[:, None], other=0.0)
    lse = tl.load(lse_ptr + head * T + rows, mask=live, other=0.0)
    delta = tl.load(delta_ptr + rows * HQ + head, mask=live, other=0.0)
    starts = tl.load(start_ptr + rows, mask=live, other=0)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    for n0 in range(_first_key(start_ptr, m0, window), tl.minimum(m0 + BLOCK_M, T), BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        where = (keys[:, None].to(tl.int64) * HKV + kv_head) * D + d[None, :]
        k = tl.load(k_ptr + where, mask=(keys < T)[:, None], other=0.0)
        v = tl.load(v_ptr + where, mask=(keys < T)[:, None], other=0.0)
        seen = _visible(rows, starts, keys, T, window) & live[:, None]
        p = tl.where(seen, tl.exp(tl.dot(q, tl.trans(k)) * scale - lse[:, None]), 0.0)
        ds = p * (tl.dot(do, tl.trans(v)) - delta[:, None])
        acc += pieces_dot(ds, k)
    tl.store(dq_ptr + own, acc * scale, mask=live[:, None])


@triton.jit
def _dkdv(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, start_ptr, end_ptr, dk_ptr, dv_ptr, T, window, scale,
          HQ, HKV, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    n0 = tl.program_id(0) * BLOCK_N
    kv_head = tl.program_id(1)
    keys = n0 + tl.arange(0, BLOCK_N)
    inside = keys < T
    d = tl.arange(0, D)
    own = (keys[:, None].to(tl.int64) * HKV + kv_head) * D + d[None, :]
    k = tl.load(k_ptr + own, mask=inside[:, None], other=0.0)
    v = tl.load(v_ptr + own, mask=inside[:, None], other=0.0)
    dk = tl.zeros([BLOCK_N, D], tl.float32)
    dv = tl.zeros([BLOCK_N, D], tl.float32)
    last = tl.minimum(n0 + BLOCK_N, T) - 1
    hi = tl.load(end_ptr + last)  # no row past the last key's document sees the block
    if window > 0:
        hi = tl.minimum(hi, last + window)
    for h in range(HQ // HKV):
        head = kv_head * (HQ // HKV) + h
        for m0 in range(n0, hi, BLOCK_M):
            rows = m0 + tl.arange(0, BLOCK_M)
            live = rows < T
            where = (rows[:, None].to(tl.int64) * HQ + head) * D + d[None, :]
            q = tl.load(q_ptr + where, mask=live[:, None], other=0.0)
            do = tl.load(do_ptr + where, mask=live[:, None], other=0.0)
            lse = tl.load(lse_ptr + head * T + rows, mask=live, other=0.0)
            delta = tl.load(delta_ptr + rows * HQ + head, mask=live, other=0.0)
            starts = tl.load(start_ptr + rows, mask=live, other=0)
            seen = tl.trans(_visible(rows, starts, keys, T, window)) & live[None, :]  # [keys, rows]
            p = tl.where(seen, tl.exp(tl.dot(k, tl.trans(q)) * scale - lse[None, :]), 0.0)
            dv += pieces_dot(p, do)
            ds = p * (tl.dot(v, tl.trans(do)) - delta[None, :])
            dk += pieces_dot(ds, q)
    tl.store(dk_ptr + own, dk * scale, mask=inside[:, None])
    tl.store(dv_ptr + own, dv, mask=inside[:, None])


def _config(device: torch.device, d: int) -> tuple[int, int, dict]:
    """(BLOCK_M, BLOCK_N, launch options): 16 x 16 in the interpreter (the smallest
    ``tl.dot``); on a GPU 64 x 64 with 8 warps, 32 keys a block at D = 256, where the dK/dV
    kernel holds two [BLOCK_N, 256] fp32 accumulators."""
    if device.type == "cpu":
        return 16, 16, {}
    return 64, 32 if d >= 256 else 64, {"num_warps": 8, "num_stages": 2}


def _documents(cu_seqlens: torch.Tensor, t: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Each token's document bounds, ``start`` and ``end`` (exclusive), int32 [T]."""
    tokens = torch.arange(t, device=cu_seqlens.device, dtype=cu_seqlens.dtype)
    doc = torch.searchsorted(cu_seqlens[1:].contiguous(), tokens, right=True)
    return cu_seqlens[doc].to(torch.int32).contiguous(), cu_seqlens[doc + 1].to(torch.int32).contiguous()


def _check(q: torch.Tensor) -> None:
    d = q.shape[2]
    if d & (d - 1) or d < 16:
        raise ValueError(f"the fused reference needs a power-of-two head dim of at least 16, not {d}")


def forward(q, k, v, cu_seqlens, window: int, scale: float):
    """fp32 o [T, Hq, D] and lse [Hq, T], as ``reference.forward``."""
    _check(q)
    t, hq, d = q.shape
    o = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    lse = torch.full((hq, t), float("-inf"), dtype=torch.float32, device=q.device)
    if t:
        _statistics(q, k, v, _documents(cu_seqlens, t)[0], window, scale, o, lse, with_o=True)
    return o, lse


def _statistics(q, k, v, start, window, scale, o, lse, with_o: bool) -> None:
    t, hq, d = q.shape
    block_m, block_n, launch = _config(q.device, d)
    _rows[(triton.cdiv(t, block_m), hq)](q, k, v, start, o, lse, t, int(window), float(scale), HQ=hq,
                                         HKV=k.shape[1], D=d, WITH_O=with_o, BLOCK_M=block_m, BLOCK_N=block_n,
                                         **launch)


def backward(q, k, v, o, do, cu_seqlens, window: int, scale: float):
    """fp32 dq [T, Hq, D], dk and dv [T, Hkv, D], as ``reference.backward``."""
    _check(q)
    t, hq, d = q.shape
    hkv = k.shape[1]
    dq = torch.zeros(t, hq, d, dtype=torch.float32, device=q.device)
    dk = torch.zeros(t, hkv, d, dtype=torch.float32, device=q.device)
    dv = torch.zeros(t, hkv, d, dtype=torch.float32, device=q.device)
    if not t:
        return dq, dk, dv
    start, end = _documents(cu_seqlens, t)
    lse = torch.empty(hq, t, dtype=torch.float32, device=q.device)
    _statistics(q, k, v, start, window, scale, dq, lse, with_o=False)  # dq: an unused output slot
    delta = (do.float() * o.float()).sum(-1).contiguous()  # [T, Hq], as the plain reference takes it
    block_m, block_n, launch = _config(q.device, d)
    window, scale = int(window), float(scale)
    _dq[(triton.cdiv(t, block_m), hq)](q, k, v, do, lse, delta, start, dq, t, window, scale, HQ=hq, HKV=hkv, D=d,
                                       BLOCK_M=block_m, BLOCK_N=block_n, **launch)
    _dkdv[(triton.cdiv(t, block_n), hkv)](q, k, v, do, lse, delta, start, end, dk, dv, t, window, scale, HQ=hq,
                                          HKV=hkv, D=d, BLOCK_M=block_m, BLOCK_N=block_n, **launch)
    return dq, dk, dv
