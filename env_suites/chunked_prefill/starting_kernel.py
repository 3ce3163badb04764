"""Starting kernel for chunked_prefill: correct, simple Triton, slow. Make it fast.

One program per (block of a sequence's new queries, query head) walks that sequence's keys
from the first to the last one its block can see, one block of keys at a time, looking up
each key's page in the block table, with an online softmax in fp32. Every query head loads
its KV head's keys again (no sharing across a GQA group), every key block is masked, the
blocks are small, and which (sequence, block) each program takes is worked out on the host.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _prefill(q_ptr, k_ptr, v_ptr, table_ptr, seqlens_ptr, cu_ptr, block_seq_ptr, block_start_ptr, o_ptr,
             table_width, scale, HQ: tl.constexpr, HKV: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    seq = tl.load(block_seq_ptr + tl.program_id(0))
    start = tl.load(block_start_ptr + tl.program_id(0))  # first query row of the block, within the chunk
    head = tl.program_id(1)
    kv_head = head // (HQ // HKV)
    q0, q1 = tl.load(cu_ptr + seq), tl.load(cu_ptr + seq + 1)
    context = tl.load(seqlens_ptr + seq)
    first = context - (q1 - q0)  # absolute position of the chunk's first query
    rows = start + tl.arange(0, BLOCK_M)
    row_ok = q0 + rows < q1
    position = first + rows
    dims = tl.arange(0, D)
    q = tl.load(q_ptr + ((q0 + rows[:, None]) * HQ + head) * D + dims[None, :], mask=row_ok[:, None], other=0.0)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    end = tl.minimum(first + start + BLOCK_M, context)  # keys past the block's last query are never seen
    for start_n in range(0, end, BLOCK_N):
        keys = start_n + tl.arange(0, BLOCK_N)
        key_ok = keys < end
        page = tl.load(table_ptr + seq * table_width + keys // PAGE, mask=key_ok, other=0)
        where = ((page[:, None] * HKV + kv_head) * PAGE + keys[:, None] % PAGE) * D + dims[None, :]
        k = tl.load(k_ptr + where, mask=key_ok[:, None], other=0.0)
        v = tl.load(v_ptr + where, mask=key_ok[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        visible = (keys[None, :] <= position[:, None]) & key_ok[None, :] & row_ok[:, None]
        scores = tl.where(visible, scores, float("-inf"))
        m_new = tl.maximum(m, tl.max(scores, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # a row that has seen nothing yet
        p = tl.exp(scores - m_safe[:, None])
        correction = tl.exp(m - m_safe)
        l = l * correction + tl.sum(p, axis=1)
        acc = acc * correction[:, None] + tl.dot(p.to(tl.bfloat16), v)
        m = m_new
    out = acc / tl.where(l > 0, l, 1.0)[:, None]
    tl.store(o_ptr + ((q0 + rows[:, None]) * HQ + head) * D + dims[None, :], out.to(tl.bfloat16),
             mask=row_ok[:, None])


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    tq, hq, d = q.shape
    hkv, page = k_cache.shape[1], k_cache.shape[2]
    block_m = 16 if q.device.type == "cpu" else 64
    block_n = 16 if q.device.type == "cpu" else (64 if d <= 128 else 32)
    lengths = (cu_seqlens_q[1:] - cu_seqlens_q[:-1]).tolist()
    block_seq = [s for s, n in enumerate(lengths) for _ in range(triton.cdiv(n, block_m))]
    block_start = [i * block_m for n in lengths for i in range(triton.cdiv(n, block_m))]
    block_seq = torch.tensor(block_seq, dtype=torch.int32, device=q.device)
    block_start = torch.tensor(block_start, dtype=torch.int32, device=q.device)
    o = torch.empty_like(q)
    _prefill[(len(block_seq), hq)](q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, block_seq,
                                   block_start, o, block_table.shape[1], softmax_scale, HQ=hq, HKV=hkv, D=d,
                                   PAGE=page, BLOCK_M=block_m, BLOCK_N=block_n)
    return o
