"""chunked_prefill in Gluon: FlashAttention-3's forward structure over the paged cache, a
prototype beside the Triton solution (``solution.py``), compiled for sm_90a but not yet run.

Why: a kernel holding 64 rows per K/V tile read does 64 FLOP per byte of K and V, so at
cuDNN's rates it needs 7.5-10 TB/s from L2, and the Triton kernel's tiles hold 64 rows or
run no faster at 128 (docs/results/chunked_prefill.md): the hypothesis this prototype
tests. Here a block is 128 rows (a KV head's query-head group times its tokens, as in the Triton
solution) over two consumer warpgroups that share each K/V tile read, and one producer warp
streams K and V by TMA into a ring of shared-memory stages, so the loads of the next tiles
overlap this tile's products and softmax, and the consumers keep their registers for the
accumulators.

- Producer (1 warp): per key tile, the block table lookup(s) and TMA loads of K and V into
  the next free stage (``ready`` / ``empty`` barriers); a page shorter than the tile takes one
  load per page into its slice of the stage.
- Consumers (two partitions of one warpgroup, 64 rows each, 240 registers a thread): S = Q K^T
  by wgmma from shared memory, the online softmax in exp2 with the scale folded, P from
  registers into the P V wgmma; masks only on tiles at or past the block's first query
  position (the causal diagonal and the sequence's end), whose keys past the end get
  probability exactly 0 (the garbage behind them is finite by contract). Each hands a stage
  back on its own, so one's softmax can run beside the other's products.
- The GPU only (Gluon has no interpreter): ``kernel`` needs CUDA tensors.
"""

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_init, warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

# Triton 3.6 (the H200's) names the TMA load async_copy_global_to_shared; later ones async_load.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared

BLOCK_M = 128  # rows per block: two consumer warpgroups of 64
# Registers per thread: 2 x 128 consumer threads at 240 and 32 producer threads at 24 fill the
# SM's 64 K (a producer issues scalar lookups and TMA copies: the fewest registers allowed).
CONSUMER_REGS = 240
PRODUCER_REGS = 24
# FlashAttention-3's overlap inside each consumer (``_attend``): off where measured slower.
# Only at D <= 128: at D = 256 the [64, 256] fp32 accumulator alone takes 128 of a thread's
# 240 registers, and a second score tile in flight leaves no room for P and the addressing.
OVERLAP = False
# Per head dim, (BLOCK_N, stages): keys per tile and the depth of the K and V rings, inside
# 227 KiB of shared memory with Q's [128, D] tile (D = 256: 64 KiB of Q and 2 x 2 x 32 KiB of
# K and V stages).
TILES = {64: (128, 3), 128: (128, 2), 256: (64, 2)}


@gluon.jit
def _load_tile(desc, bufs, ready, empty, table, kv_head, i, end, HKV: gl.constexpr, PAGE: gl.constexpr,
               BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """Tile ``i`` of K (or V) into its stage once the consumers have handed that stage back."""
    PIECE: gl.constexpr = BLOCK_N if PAGE >= BLOCK_N else PAGE  # rows one TMA load brings
    stage = i % STAGES
    # A fresh barrier counts as having completed the phase before its first: the first pass
    # over the ring waits for nothing.
    mbarrier.wait(empty.index(stage), ((i // STAGES) & 1) ^ 1)
    mbarrier.expect(ready.index(stage), BLOCK_N * desc.block_type.shape[1] * 2)
    for piece in gl.static_range(BLOCK_N // PIECE):
        key = i * BLOCK_N + piece * PIECE
        # A piece past the last key reads the last page again (a table entry past the
        # sequence's pages may lie past the table): its rows meet probabilities of 0.
        key = gl.minimum(key, ((end - 1) // PAGE) * PAGE)
        row = (gl.load(table + key // PAGE) * HKV + kv_head) * PAGE + key % PAGE
        _tma_load(desc, [row, 0], ready.index(stage), bufs.index(stage).slice(piece * PIECE, PIECE))


@gluon.jit
def _loader(k_desc, v_desc, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, table, kv_head, end,
            HKV: gl.constexpr, PAGE: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr):
    """The producer: K and V tiles of keys [0, end) into their rings, in order. K and V have
    rings of their own because the consumers are done with a tile's K (after S) an iteration
    before its V (after P V): the next K loads while this tile's P V runs."""
    for i in range(gl.cdiv(end, BLOCK_N)):
        _load_tile(k_desc, k_bufs, k_ready, k_empty, table, kv_head, i, end, HKV, PAGE, BLOCK_N, STAGES)
        _load_tile(v_desc, v_bufs, v_ready, v_empty, table, kv_head, i, end, HKV, PAGE, BLOCK_N, STAGES)


@gluon.jit
def _softmax_step(s, m_i, l_i, first_key, unmasked_end, end, position, BLOCK_N: gl.constexpr, s_layout: gl.constexpr):
    """One tile's online softmax on scores already in log2 units: (P, the rescale of what came
    before, the new row maxima and sums). A tile at or past ``unmasked_end`` is masked: keys
    past a row's position or the sequence's end get probability exactly 0."""
    if first_key >= unmasked_end:
        keys = first_key + gl.arange(0, BLOCK_N, layout=gl.SliceLayout(0, s_layout))
        s = gl.where((keys[None, :] <= position[:, None]) & (keys < end)[None, :], s, float("-inf"))
    m_new = gl.maximum(m_i, gl.max(s, axis=1))
    m_safe = gl.where(m_new == float("-inf"), 0.0, m_new)  # padded rows see no key at all
    p = gl.exp2(s - m_safe[:, None])
    alpha = gl.exp2(m_i - m_safe)
    return p, alpha, m_new, l_i * alpha + gl.sum(p, axis=1)


@gluon.jit
def _issue_scores(q_smem, k_tile, ROWS: gl.constexpr, BLOCK_N: gl.constexpr, s_layout: gl.constexpr):
    """S = Q K^T for one tile, in flight (wait on it with warpgroup_mma_wait)."""
    return warpgroup_mma(q_smem, k_tile.permute((1, 0)), gl.zeros([ROWS, BLOCK_N], gl.float32, s_layout),
                         use_acc=False, is_async=True)


@gluon.jit
def _issue_pv(acc, p, alpha, v_tile, rows_o: gl.constexpr, p_layout: gl.constexpr):
    """The output so far rescaled by ``alpha``, then P V added, in flight. P stays in
    registers: the scores' accumulator layout is already the A operand's."""
    acc = acc * gl.convert_layout(alpha, rows_o)[:, None]
    return warpgroup_mma(gl.convert_layout(p.to(gl.bfloat16), p_layout, assert_trivial=True), v_tile, acc,
                         is_async=True)


@gluon.jit
def _attend(q_ptr, o_ptr, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, q0, q1, start, first, end, kv_head,
            scale_log2, HALF: gl.constexpr, HQ: gl.constexpr, GROUP: gl.constexpr, GROUP_P2: gl.constexpr,
            D: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
            OVERLAP: gl.constexpr):
    """One consumer warpgroup: rows HALF * 64 .. + 64 of the block (block row r is query head
    r // TOKENS of the group at token r % TOKENS) against keys [0, end), its output written
    through pointers. The two consumers share nothing but the rings: each hands a stage back
    with its own arrival (``*_empty`` count two), so neither waits for the other."""
    ROWS: gl.constexpr = 64
    s_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, BLOCK_N, 16])
    o_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                       instr_shape=[16, D, 16])
    p_layout: gl.constexpr = gl.DotOperandLayout(operand_index=0, parent=o_layout, k_width=2)
    rows_s: gl.constexpr = gl.SliceLayout(1, s_layout)
    rows_o: gl.constexpr = gl.SliceLayout(1, o_layout)
    TOKENS: gl.constexpr = BLOCK_M // GROUP_P2

    # Q through registers into shared memory: its rows are not one box of the [T, HQ, D] tensor.
    r = HALF * ROWS + gl.arange(0, ROWS, layout=rows_o)
    token, g = start + r % TOKENS, r // TOKENS
    row_ok = (q0 + token < q1) & (g < GROUP)
    cols = gl.arange(0, D, layout=gl.SliceLayout(0, o_layout))
    q_at = ((q0 + token[:, None]) * HQ + kv_head * GROUP + g[:, None]) * D + cols[None, :]
    q = gl.load(q_ptr + q_at, mask=row_ok[:, None], other=0.0)
    q_smem = gl.allocate_shared_memory(gl.bfloat16, [ROWS, D],
                                       gl.NVMMASharedLayout.get_default_for([ROWS, D], gl.bfloat16), q)
    fence_async_shared()

    # Each row's query position.
    position = first + start + (HALF * ROWS + gl.arange(0, ROWS, layout=rows_s)) % TOKENS
    m_i = gl.full([ROWS], float("-inf"), gl.float32, layout=rows_s)
    l_i = gl.zeros([ROWS], gl.float32, layout=rows_s)
    acc = gl.zeros([ROWS, D], gl.float32, layout=o_layout)
    unmasked_end = ((first + start) // BLOCK_N) * BLOCK_N  # keys below the first query: visible to all
    tiles = gl.cdiv(end, BLOCK_N)
    if OVERLAP:
        # FlashAttention-3's overlap inside a warpgroup: tile i + 1's S product is issued
        # before tile i's softmax, and tile i's P V runs while S of tile i + 1 is waited for,
        # so the tensor cores always hold one product while the softmax runs. wgmma groups
        # complete in the order issued, so "one outstanding" names exactly the younger one.
        # The last tile, which has no successor to overlap, is peeled off the loop: each wait
        # inside it then has a fixed count.
        mbarrier.wait(k_ready.index(0), 0)
        s = warpgroup_mma_wait(num_outstanding=0, deps=(_issue_scores(q_smem, k_bufs.index(0), ROWS, BLOCK_N,
                                                                      s_layout),))
        mbarrier.arrive(k_empty.index(0), count=1)
        acc = warpgroup_mma_init(acc)  # loop-carried as a product in flight
        for i in range(tiles - 1):
            stage, following = i % STAGES, (i + 1) % STAGES
            mbarrier.wait(k_ready.index(following), ((i + 1) // STAGES) & 1)
            s_next = _issue_scores(q_smem, k_bufs.index(following), ROWS, BLOCK_N, s_layout)
            p, alpha, m_i, l_i = _softmax_step(s * scale_log2, m_i, l_i, i * BLOCK_N, unmasked_end, end, position,
                                               BLOCK_N, s_layout)
            acc = warpgroup_mma_wait(num_outstanding=1, deps=(acc,))  # P V of tile i - 1, older than S
            if i > 0:
                mbarrier.arrive(v_empty.index((i - 1) % STAGES), count=1)
            mbarrier.wait(v_ready.index(stage), (i // STAGES) & 1)
            acc = _issue_pv(acc, p, alpha, v_bufs.index(stage), rows_o, p_layout)
            s = warpgroup_mma_wait(num_outstanding=1, deps=(s_next,))  # S of tile i + 1; P V still runs
            mbarrier.arrive(k_empty.index(following), count=1)
        last = tiles - 1
        p, alpha, m_i, l_i = _softmax_step(s * scale_log2, m_i, l_i, last * BLOCK_N, unmasked_end, end, position,
                                           BLOCK_N, s_layout)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        if last > 0:
            mbarrier.arrive(v_empty.index((last - 1) % STAGES), count=1)
        mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
        acc = _issue_pv(acc, p, alpha, v_bufs.index(last % STAGES), rows_o, p_layout)
        acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
        mbarrier.arrive(v_empty.index(last % STAGES), count=1)
    else:
        for i in range(tiles):
            stage = i % STAGES
            mbarrier.wait(k_ready.index(stage), (i // STAGES) & 1)
            s = _issue_scores(q_smem, k_bufs.index(stage), ROWS, BLOCK_N, s_layout)
            s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
            mbarrier.arrive(k_empty.index(stage), count=1)  # this warpgroup is done with K
            p, alpha, m_i, l_i = _softmax_step(s * scale_log2, m_i, l_i, i * BLOCK_N, unmasked_end, end, position,
                                               BLOCK_N, s_layout)
            mbarrier.wait(v_ready.index(stage), (i // STAGES) & 1)
            acc = _issue_pv(acc, p, alpha, v_bufs.index(stage), rows_o, p_layout)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(v_empty.index(stage), count=1)  # and with V
    out = acc / gl.convert_layout(gl.where(l_i > 0, l_i, 1.0), rows_o)[:, None]
    gl.store(o_ptr + q_at, out.to(gl.bfloat16), mask=row_ok[:, None])


@gluon.jit
def _prefill(q_ptr, k_desc, v_desc, table_ptr, seqlens_ptr, cu_ptr, item_seq_ptr, item_start_ptr, o_ptr, items_ptr,
             table_width, scale_log2, HQ: gl.constexpr, HKV: gl.constexpr, GROUP: gl.constexpr,
             GROUP_P2: gl.constexpr, D: gl.constexpr, PAGE: gl.constexpr, BLOCK_M: gl.constexpr,
             BLOCK_N: gl.constexpr, STAGES: gl.constexpr, OVERLAP: gl.constexpr, CONSUMER_REGS: gl.constexpr,
             PRODUCER_REGS: gl.constexpr):
    item = gl.program_id(0)
    if item < gl.load(items_ptr):  # the grid has room for the most blocks a split can need
        kv_head = gl.program_id(1)
        seq = gl.load(item_seq_ptr + item)
        start = gl.load(item_start_ptr + item)
        q0 = gl.load(cu_ptr + seq)
        q1 = gl.load(cu_ptr + seq + 1)
        context = gl.load(seqlens_ptr + seq)
        first = context - (q1 - q0)
        end = gl.minimum(first + start + BLOCK_M // GROUP_P2, context)  # past the block's last query: none
        k_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, D], k_desc.layout)
        v_bufs = gl.allocate_shared_memory(gl.bfloat16, [STAGES, BLOCK_N, D], v_desc.layout)
        k_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        v_ready = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        k_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        v_empty = gl.allocate_shared_memory(gl.int64, [STAGES, 1], mbarrier.MBarrierLayout())
        for stage in gl.static_range(STAGES):
            mbarrier.init(k_ready.index(stage), count=1)
            mbarrier.init(v_ready.index(stage), count=1)
            mbarrier.init(k_empty.index(stage), count=2)  # one arrival per consumer warpgroup
            mbarrier.init(v_empty.index(stage), count=2)
        gl.warp_specialize([
            # The default partition (this kernel's 4 warps) takes the block's first 64 rows.
            (_attend, (q_ptr, o_ptr, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, q0, q1, start, first,
                       end, kv_head, scale_log2, 0, HQ, GROUP, GROUP_P2, D, BLOCK_M, BLOCK_N, STAGES, OVERLAP)),
            (_attend, (q_ptr, o_ptr, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, q0, q1, start, first,
                       end, kv_head, scale_log2, 1, HQ, GROUP, GROUP_P2, D, BLOCK_M, BLOCK_N, STAGES, OVERLAP)),
            (_loader, (k_desc, v_desc, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty,
                       table_ptr + seq * table_width, kv_head, end, HKV, PAGE, BLOCK_N, STAGES)),
        ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


def _work_items(cu_seqlens_q, cache_seqlens, tokens_per_block: int, most: int):
    """(sequence, first token) of every block, heaviest first, made on the device: ``most``
    slots, the first ``count`` of which are real (the grid is sized on the host without a sync).
    The Triton solution's own: a kernel file is graded alone, so each carries its copy."""
    lengths = cu_seqlens_q[1:] - cu_seqlens_q[:-1]
    blocks = (lengths + tokens_per_block - 1) // tokens_per_block
    ends = torch.cumsum(blocks, 0)
    slot = torch.arange(most, device=lengths.device)
    seq = torch.searchsorted(ends, slot, right=True).clamp_(max=lengths.numel() - 1)
    start = (slot - (ends[seq] - blocks[seq])) * tokens_per_block
    work = torch.where(slot < ends[-1], cache_seqlens[seq] - lengths[seq] + start + tokens_per_block, -1)
    order = torch.argsort(work, descending=True)
    return seq[order].to(torch.int32), start[order].to(torch.int32), ends[-1:]


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    tokens, hq, d = q.shape
    pages, page, hkv = k_cache.shape[0], k_cache.shape[2], k_cache.shape[1]
    group = hq // hkv
    group_p2 = triton.next_power_of_2(group)
    block_n, stages = TILES[d]
    piece = min(page, block_n)
    # The cache as [pages * HKV * PAGE, D]: a page's rows of one KV head are contiguous.
    layout = gl.NVMMASharedLayout.get_default_for([piece, d], gl.bfloat16)
    k_desc = TensorDescriptor.from_tensor(k_cache.view(pages * hkv * page, d), [piece, d], layout)
    v_desc = TensorDescriptor.from_tensor(v_cache.view(pages * hkv * page, d), [piece, d], layout)
    tokens_per_block = BLOCK_M // group_p2
    most = tokens // tokens_per_block + block_table.shape[0]  # at most one partial block per sequence
    item_seq, item_start, count = _work_items(cu_seqlens_q, cache_seqlens, tokens_per_block, most)
    o = torch.empty_like(q)
    _prefill[(most, hkv)](q, k_desc, v_desc, block_table, cache_seqlens, cu_seqlens_q, item_seq, item_start, o, count,
                          block_table.shape[1], float(softmax_scale) * 1.4426950408889634, HQ=hq, HKV=hkv,
                          GROUP=group, GROUP_P2=group_p2, D=d, PAGE=page, BLOCK_M=BLOCK_M, BLOCK_N=block_n,
                          STAGES=stages, OVERLAP=OVERLAP and d <= 128, CONSUMER_REGS=CONSUMER_REGS, PRODUCER_REGS=PRODUCER_REGS,
                          num_warps=4)
    return o
