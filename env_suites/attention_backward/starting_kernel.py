"""Starting kernel for attention_backward: correct, simple Triton, slow. Make it fast.

Two kernels. ``_dkdv``: one program per (block of keys, KV head) walks every query block
that can see it, for each query head of the group, accumulating dK and dV. ``_dq``: one
program per (block of queries, query head) walks the keys it can see. Visibility (same
document, causal, window) comes from per-token document ids; delta = rowsum(dO * O) is
computed with torch first. No tiling for D = 256, no skipping of fully masked tiles
beyond the window and document bounds, small blocks.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _visible(rows, cols, row_doc, col_doc, window):
    mask = (row_doc[:, None] == col_doc[None, :]) & (cols[None, :] <= rows[:, None])
    return mask & ((window < 0) | (rows[:, None] - cols[None, :] < window))


@triton.jit
def _dkdv(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, doc_ptr, dk_ptr, dv_ptr, T, window, scale,
          HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
    start_n = tl.program_id(0) * BLOCK
    kv_head = tl.program_id(1)
    cols = start_n + tl.arange(0, BLOCK)
    dims = tl.arange(0, D)
    col_ok = cols < T
    col_doc = tl.load(doc_ptr + cols, mask=col_ok, other=-1)
    k = tl.load(k_ptr + (cols[:, None] * HKV + kv_head) * D + dims[None, :], mask=col_ok[:, None], other=0.0)
    v = tl.load(v_ptr + (cols[:, None] * HKV + kv_head) * D + dims[None, :], mask=col_ok[:, None], other=0.0)
    dk = tl.zeros([BLOCK, D], dtype=tl.float32)
    dv = tl.zeros([BLOCK, D], dtype=tl.float32)
    end_m = T
    if window > 0:
        end_m = tl.minimum(T, start_n + BLOCK - 1 + window)
    for g in range(HQ // HKV):
        head = kv_head * (HQ // HKV) + g
        for start_m in range(start_n - start_n % BLOCK, end_m, BLOCK):
            rows = start_m + tl.arange(0, BLOCK)
            row_ok = rows < T
            row_doc = tl.load(doc_ptr + rows, mask=row_ok, other=-2)
            q = tl.load(q_ptr + (rows[:, None] * HQ + head) * D + dims[None, :], mask=row_ok[:, None], other=0.0)
            do = tl.load(do_ptr + (rows[:, None] * HQ + head) * D + dims[None, :], mask=row_ok[:, None], other=0.0)
            lse = tl.load(lse_ptr + head * T + rows, mask=row_ok, other=0.0)
            delta = tl.load(delta_ptr + head * T + rows, mask=row_ok, other=0.0)
            scores = tl.dot(q, tl.trans(k)) * scale
            mask = _visible(rows, cols, row_doc, col_doc, window) & row_ok[:, None] & col_ok[None, :]
            p = tl.where(mask, tl.exp(scores - lse[:, None]), 0.0)
            dv += tl.dot(tl.trans(p.to(tl.bfloat16)), do)
            dp = tl.dot(do, tl.trans(v))
            ds = p * (dp - delta[:, None])
            dk += tl.dot(tl.trans(ds.to(tl.bfloat16)), q)
    out = (cols[:, None] * HKV + kv_head) * D + dims[None, :]
    tl.store(dk_ptr + out, (dk * scale).to(tl.bfloat16), mask=col_ok[:, None])
    tl.store(dv_ptr + out, dv.to(tl.bfloat16), mask=col_ok[:, None])


@triton.jit
def _dq(q_ptr, k_ptr, v_ptr, do_ptr, lse_ptr, delta_ptr, doc_ptr, dq_ptr, T, window, scale,
        HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, BLOCK: tl.constexpr):
    start_m = tl.program_id(0) * BLOCK
    head = tl.program_id(1)
    kv_head = head // (HQ // HKV)
    rows = start_m + tl.arange(0, BLOCK)
    dims = tl.arange(0, D)
    row_ok = rows < T
    row_doc = tl.load(doc_ptr + rows, mask=row_ok, other=-2)
    q = tl.load(q_ptr + (rows[:, None] * HQ + head) * D + dims[None, :], mask=row_ok[:, None], other=0.0)
    do = tl.load(do_ptr + (rows[:, None] * HQ + head) * D + dims[None, :], mask=row_ok[:, None], other=0.0)
    lse = tl.load(lse_ptr + head * T + rows, mask=row_ok, other=0.0)
    delta = tl.load(delta_ptr + head * T + rows, mask=row_ok, other=0.0)
    dq = tl.zeros([BLOCK, D], dtype=tl.float32)
    start = 0
    if window > 0:
        start = tl.maximum(0, start_m - window + 1)
    for start_n in range(start - start % BLOCK, tl.minimum(T, start_m + BLOCK), BLOCK):
        cols = start_n + tl.arange(0, BLOCK)
        col_ok = cols < T
        col_doc = tl.load(doc_ptr + cols, mask=col_ok, other=-1)
        k = tl.load(k_ptr + (cols[:, None] * HKV + kv_head) * D + dims[None, :], mask=col_ok[:, None], other=0.0)
        v = tl.load(v_ptr + (cols[:, None] * HKV + kv_head) * D + dims[None, :], mask=col_ok[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        mask = _visible(rows, cols, row_doc, col_doc, window) & row_ok[:, None] & col_ok[None, :]
        p = tl.where(mask, tl.exp(scores - lse[:, None]), 0.0)
        dp = tl.dot(do, tl.trans(v))
        ds = p * (dp - delta[:, None])
        dq += tl.dot(ds.to(tl.bfloat16), k)
    out = (rows[:, None] * HQ + head) * D + dims[None, :]
    tl.store(dq_ptr + out, (dq * scale).to(tl.bfloat16), mask=row_ok[:, None])


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    t, hq, d = q.shape
    hkv = k.shape[1]
    lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).long()
    doc = torch.repeat_interleave(torch.arange(len(lengths), device=q.device, dtype=torch.int32), lengths)
    delta = (do.float() * o.float()).sum(-1).transpose(0, 1).contiguous()  # [Hq, T]
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    # 64-row blocks of 256-wide heads overflow shared memory on the H200; 32 fit.
    block = 16 if q.device.type == "cpu" else (64 if d <= 128 else 32)
    args = (q, k, v, do, lse, delta, doc)
    _dkdv[(triton.cdiv(t, block), hkv)](*args, dk, dv, t, window, softmax_scale, HQ=hq, HKV=hkv, D=d, BLOCK=block)
    _dq[(triton.cdiv(t, block), hq)](*args, dq, t, window, softmax_scale, HQ=hq, HKV=hkv, D=d, BLOCK=block)
    return dq, dk, dv
