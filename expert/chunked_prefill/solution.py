"""Expert-reviewed solution for chunked_prefill: a KV head's whole query-head group per block of
new tokens, heaviest blocks first; on the H200 a warp-specialised Gluon kernel
(FlashAttention-3's forward structure), elsewhere the same algorithm as one Triton kernel.

What both kernels exploit:
- A block takes some of one sequence's new tokens and *every* query head of one KV head
  (rows = group x tokens), so each page of K and V is read once per group instead of once
  per query head (4-8x less cache traffic at the GQA ratios served today).
- Keys below the block's first query position are visible to every row: that part of the
  loop runs without a mask; only the last key tiles (the causal diagonal and the sequence's
  end) are masked, and keys past the end get probability exactly 0, so the garbage behind
  them (finite by contract) adds nothing.
- The block list is made on the device (no host sync) in one launch (``_plan_blocks``) and
  ordered by the keys each block visits, largest first, so the long prefill's late blocks
  start before the short chunks.
- exp2 with the softmax scale folded into log2(e); P V accumulates into the running output
  inside the matrix product.

The Gluon kernel (``_prefill_gluon``, CUDA at D >= GLUON_MIN_D): 128-row blocks over two
consumer warpgroups that share each K/V tile read (a 64-row tile does 64 FLOP per byte of K
and V, which at cuDNN's rates asks 7.5-10 TB/s of L2), and one producer warp that looks pages
up and streams K and V by TMA into a ring of shared-memory stages each (``*_ready`` /
``*_empty`` mbarriers), so the next tiles load while this one's products and softmax run and
the consumers keep their registers (240 each) for the accumulators. Each consumer keeps the
next tile's S product and this tile's P V in flight while it runs the softmax (``OVERLAP``).
P stays in registers for the P V wgmma. A page shorter than a tile takes one TMA load per
page into its slice of the stage.

The Triton kernel (``_prefill_triton``: the CPU, through the interpreter, and D = 64 on the
GPU, where it measured faster): the same blocks and masks with 64-row tiles, pages looked up
per tile (or per key for 16-key pages) and loaded by pointers or a TMA descriptor.
"""

import torch
import triton
import triton.language as tl
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import (fence_async_shared, mbarrier, tma, warpgroup_mma,
                                                              warpgroup_mma_wait)
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor

# Triton 3.6 (the H200's) names the TMA load async_copy_global_to_shared; later ones async_load.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared

# The Gluon kernel from this head dim up; below it the Triton kernel, the faster of the two at
# D = 64 on the H200 (docs/results/chunked_prefill.md).
GLUON_MIN_D = 128

BLOCK_M = 128  # rows per block: two consumer warpgroups of 64
# Registers per thread after setmaxnreg. The block launches as three warpgroups of 168 (64512
# registers, all an SM has for 384 threads) and setmaxnreg only moves registers between its
# warpgroups: 2 x 128 x 240 + 128 x 24 = 64512, so a larger share for either side would leave
# the consumers' increase waiting forever. The producer (one warp working, scalar lookups and
# TMA copies) takes the fewest allowed; at 16-key pages its 8 lookups a tile spill 24 bytes.
CONSUMER_REGS = 240
PRODUCER_REGS = 24
# FlashAttention-3's overlap inside each consumer (``_attend``): tile i + 1's S product and
# tile i's P V in flight while tile i + 1's softmax runs, so the tensor cores never wait on the
# exponentials; faster at every D >= 128 sealed size on the H200 (docs/results/chunked_prefill.md).
OVERLAP = True
# Per head dim, (BLOCK_N, stages): keys per tile and the depth of the K and V rings, inside
# 227 KiB of shared memory with Q's [128, D] tile (D = 256: 64 KiB of Q and 2 x 2 x 32 KiB of
# K and V stages).
TILES = {64: (128, 3), 128: (128, 2), 256: (64, 2)}


@triton.jit
def _kv_rows(table, start_n, end, kv_head, HKV: tl.constexpr, PAGE: tl.constexpr, BLOCK_N: tl.constexpr,
             MASKED: tl.constexpr):
    """Keys ``start_n ..`` of a tile, the rows of the cache (as [pages * HKV * PAGE, D]) that
    hold them, and the first of those rows. A page at least a tile long holds the whole tile
    (tiles never straddle pages: BLOCK_N divides PAGE), so one lookup serves it and its rows
    are contiguous; smaller pages are looked up per key (the first row is then unused)."""
    keys = start_n + tl.arange(0, BLOCK_N)
    if PAGE >= BLOCK_N:
        page = tl.load(table + start_n // PAGE)  # start_n < the context: a page of this sequence
        first_row = (page * HKV + kv_head) * PAGE + start_n % PAGE
        rows = first_row + tl.arange(0, BLOCK_N)
    elif MASKED:
        page = tl.load(table + keys // PAGE, mask=keys < end, other=0)  # never past the table's width
        rows = (page * HKV + kv_head) * PAGE + keys % PAGE
        first_row = 0
    else:
        rows = (tl.load(table + keys // PAGE) * HKV + kv_head) * PAGE + keys % PAGE
        first_row = 0
    return keys, rows, first_row


@triton.jit
def _kv_tile(ptr, desc, rows, first_row, keys, end, dims, D: tl.constexpr, TMA: tl.constexpr,
             MASKED: tl.constexpr):
    """One [BLOCK_N, D] tile of K or V. Rows past the sequence's end (only in a masked tile)
    load as zeros through pointers; TMA loads them as they are: finite garbage by contract,
    which meets only probabilities of exactly 0."""
    if TMA:
        return desc.load([first_row, 0])
    elif MASKED:
        return tl.load(ptr + rows[:, None] * D + dims[None, :], mask=(keys < end)[:, None], other=0.0)
    else:
        return tl.load(ptr + rows[:, None] * D + dims[None, :])


@triton.jit
def _prefill_triton(q_ptr, k_ptr, v_ptr, table_ptr, seqlens_ptr, cu_ptr, item_seq_ptr, item_start_ptr, o_ptr,
             items_ptr, table_width, cache_rows, scale, HQ: tl.constexpr, HKV: tl.constexpr,
             GROUP: tl.constexpr, GROUP_P2: tl.constexpr, D: tl.constexpr, PAGE: tl.constexpr,
             BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, TMA: tl.constexpr):
    item = tl.program_id(0)
    if item >= tl.load(items_ptr):  # the grid has room for the most blocks a split can need
        return
    kv_head = tl.program_id(1)
    seq = tl.load(item_seq_ptr + item)
    start = tl.load(item_start_ptr + item)
    q0, q1 = tl.load(cu_ptr + seq), tl.load(cu_ptr + seq + 1)
    context = tl.load(seqlens_ptr + seq)
    first = context - (q1 - q0)
    TOKENS: tl.constexpr = BLOCK_M // GROUP_P2
    r = tl.arange(0, BLOCK_M)
    token, g = start + r % TOKENS, r // TOKENS
    row_ok = (q0 + token < q1) & (g < GROUP)
    head = kv_head * GROUP + g
    dims = tl.arange(0, D)
    q_where = ((q0 + token[:, None]) * HQ + head[:, None]) * D + dims[None, :]
    q = tl.load(q_ptr + q_where, mask=row_ok[:, None], other=0.0)
    position = first + token
    qk_scale = scale * 1.4426950408889634  # exp2 with log2(e) folded into the scale
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    l = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    table = table_ptr + seq * table_width
    k_desc, v_desc = None, None
    if TMA:
        k_desc = tl.make_tensor_descriptor(k_ptr, shape=[cache_rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
        v_desc = tl.make_tensor_descriptor(v_ptr, shape=[cache_rows, D], strides=[D, 1], block_shape=[BLOCK_N, D])
    block_first = first + start  # the block's first query position: every key below it is visible
    end = tl.minimum(block_first + TOKENS, context)
    unmasked_end = (block_first // BLOCK_N) * BLOCK_N
    for start_n in range(0, unmasked_end, BLOCK_N):
        keys, rows, first_row = _kv_rows(table, start_n, end, kv_head, HKV, PAGE, BLOCK_N, False)
        k = _kv_tile(k_ptr, k_desc, rows, first_row, keys, end, dims, D, TMA, False)
        s = tl.dot(q, tl.trans(k))
        # The scale rides on the exponent's subtraction (one FMA per score).
        m_new = tl.maximum(m, tl.max(s, axis=1) * qk_scale)
        p = tl.exp2(s * qk_scale - m_new[:, None])
        alpha = tl.exp2(m - m_new)
        l = l * alpha + tl.sum(p, axis=1)
        v = _kv_tile(v_ptr, v_desc, rows, first_row, keys, end, dims, D, TMA, False)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])  # P V into the accumulator
        m = m_new
    for start_n in range(unmasked_end, end, BLOCK_N):  # the causal diagonal and the sequence's end
        keys, rows, first_row = _kv_rows(table, start_n, end, kv_head, HKV, PAGE, BLOCK_N, True)
        k = _kv_tile(k_ptr, k_desc, rows, first_row, keys, end, dims, D, TMA, True)
        s = tl.dot(q, tl.trans(k)) * qk_scale
        s = tl.where((keys[None, :] <= position[:, None]) & (keys < end)[None, :], s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        m_safe = tl.where(m_new == float("-inf"), 0.0, m_new)  # padded rows see no key at all
        p = tl.exp2(s - m_safe[:, None])
        alpha = tl.exp2(m - m_safe)
        l = l * alpha + tl.sum(p, axis=1)
        v = _kv_tile(v_ptr, v_desc, rows, first_row, keys, end, dims, D, TMA, True)
        acc = tl.dot(p.to(tl.bfloat16), v, acc * alpha[:, None])
        m = m_new
    out = acc / tl.where(l > 0, l, 1.0)[:, None]
    tl.store(o_ptr + q_where, out.to(tl.bfloat16), mask=row_ok[:, None])


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
        # A piece wholly past the last key (pages shorter than a tile) reads the last key's
        # piece again, never a table entry past the sequence's pages (which may lie past the
        # table): its rows meet probabilities of 0. PIECE divides PAGE, so that piece lies in
        # the last key's page.
        key = gl.minimum(key, ((end - 1) // PIECE) * PIECE)
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
def _issue_pv(acc, p, v_tile, p_layout: gl.constexpr):
    """acc + P V, in flight. P stays in registers: the scores' accumulator layout is already
    the A operand's."""
    return warpgroup_mma(gl.convert_layout(p.to(gl.bfloat16), p_layout, assert_trivial=True), v_tile, acc,
                         is_async=True)


@gluon.jit
def _attend(q_ptr, o_ptr, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, q0, q1, start, first, end,
            kv_head, scale_log2, HALF: gl.constexpr, HQ: gl.constexpr, GROUP: gl.constexpr, GROUP_P2: gl.constexpr,
            D: gl.constexpr, BLOCK_M: gl.constexpr, BLOCK_N: gl.constexpr, STAGES: gl.constexpr,
            OVERLAP: gl.constexpr):
    """One consumer warpgroup: rows HALF * 64 .. + 64 of the block (block row r is query head
    r // TOKENS of the group at token r % TOKENS) against keys [0, end), its output written
    through pointers. The two consumers share the rings: each hands a stage back with its own
    arrival (``*_empty`` count two)."""
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
    # Each row's offset in [T, HQ, D]; the [64, D] pointers are formed where they are used, so
    # that none stays live through the loop (at D = 256 they alone would take 128 registers).
    row_at = ((q0 + token) * HQ + kv_head * GROUP + g) * D
    q = gl.load(q_ptr + row_at[:, None] + cols[None, :], mask=row_ok[:, None], other=0.0)
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
        # FlashAttention-3's overlap inside a warpgroup: tile i + 1's S product and tile i's
        # P V are in flight together, and tile i + 1's softmax runs while P V does. wgmma
        # groups complete in the order issued, so "one outstanding" after issuing S then P V
        # leaves exactly P V running. No instruction but a wgmma may read a product's
        # registers while any product is in flight (ptxas then serialises every wgmma of the
        # kernel, its warning C7514), so the output's rescale waits for P V to end. The last
        # tile, with no successor to overlap, is peeled off the loop: each wait has a fixed count.
        mbarrier.wait(k_ready.index(0), 0)
        s = _issue_scores(q_smem, k_bufs.index(0), ROWS, BLOCK_N, s_layout)
        s = warpgroup_mma_wait(num_outstanding=0, deps=(s,))
        mbarrier.arrive(k_empty.index(0), count=1)
        p, alpha, m_i, l_i = _softmax_step(s * scale_log2, m_i, l_i, 0, unmasked_end, end, position, BLOCK_N,
                                           s_layout)
        for i in range(tiles - 1):
            stage, following = i % STAGES, (i + 1) % STAGES
            mbarrier.wait(k_ready.index(following), ((i + 1) // STAGES) & 1)
            s_next = _issue_scores(q_smem, k_bufs.index(following), ROWS, BLOCK_N, s_layout)
            mbarrier.wait(v_ready.index(stage), (i // STAGES) & 1)  # loaded just after tile i's K
            acc = _issue_pv(acc, p, v_bufs.index(stage), p_layout)
            s = warpgroup_mma_wait(num_outstanding=1, deps=(s_next,))  # S of tile i + 1; P V still runs
            mbarrier.arrive(k_empty.index(following), count=1)
            p, alpha, m_i, l_i = _softmax_step(s * scale_log2, m_i, l_i, (i + 1) * BLOCK_N, unmasked_end, end,
                                               position, BLOCK_N, s_layout)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(v_empty.index(stage), count=1)
            acc = acc * gl.convert_layout(alpha, rows_o)[:, None]
        last = tiles - 1
        mbarrier.wait(v_ready.index(last % STAGES), (last // STAGES) & 1)
        acc = _issue_pv(acc, p, v_bufs.index(last % STAGES), p_layout)
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
            acc = acc * gl.convert_layout(alpha, rows_o)[:, None]
            mbarrier.wait(v_ready.index(stage), (i // STAGES) & 1)
            acc = _issue_pv(acc, p, v_bufs.index(stage), p_layout)
            acc = warpgroup_mma_wait(num_outstanding=0, deps=(acc,))
            mbarrier.arrive(v_empty.index(stage), count=1)  # and with V
    out = acc / gl.convert_layout(gl.where(l_i > 0, l_i, 1.0), rows_o)[:, None]
    gl.store(o_ptr + row_at[:, None] + cols[None, :], out.to(gl.bfloat16), mask=row_ok[:, None])


@gluon.jit
def _prefill_gluon(q_ptr, k_desc, v_desc, table_ptr, seqlens_ptr, cu_ptr, item_seq_ptr, item_start_ptr, o_ptr, items_ptr,
             table_width, scale_log2, HQ: gl.constexpr, HKV: gl.constexpr, GROUP: gl.constexpr,
             GROUP_P2: gl.constexpr, D: gl.constexpr, PAGE: gl.constexpr, BLOCK_M: gl.constexpr,
             BLOCK_N: gl.constexpr, STAGES: gl.constexpr, OVERLAP: gl.constexpr,
             CONSUMER_REGS: gl.constexpr, PRODUCER_REGS: gl.constexpr):
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
            (_attend, (q_ptr, o_ptr, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, q0, q1, start,
                       first, end, kv_head, scale_log2, 0, HQ, GROUP, GROUP_P2, D, BLOCK_M, BLOCK_N, STAGES, OVERLAP)),
            (_attend, (q_ptr, o_ptr, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty, q0, q1, start,
                       first, end, kv_head, scale_log2, 1, HQ, GROUP, GROUP_P2, D, BLOCK_M, BLOCK_N, STAGES, OVERLAP)),
            (_loader, (k_desc, v_desc, k_bufs, v_bufs, k_ready, v_ready, k_empty, v_empty,
                       table_ptr + seq * table_width, kv_head, end, HKV, PAGE, BLOCK_N, STAGES)),
        ], [4, 1], [CONSUMER_REGS, PRODUCER_REGS])


def _config(d: int, page: int, device: torch.device) -> dict:
    """Tiles per head dim: BLOCK_M rows (query heads x tokens), BLOCK_N keys, warps, stages,
    and whether K and V come by TMA (only where a page holds whole tiles)."""
    if device.type == "cpu":
        return dict(BLOCK_M=16, BLOCK_N=16, num_warps=4, num_stages=1, TMA=False)
    # The fastest per head dim of seven candidates timed at the five public sizes on the H200
    # (docs/results/chunked_prefill.md); the sm_90a compile (nodus-sm90) shows none spilling.
    # Past D = 64 the GPU runs the Gluon kernel unless GLUON_MIN_D is raised (a sweep's baseline).
    if d <= 64:
        return dict(BLOCK_M=64, BLOCK_N=64, num_warps=4, num_stages=2, TMA=False)
    if d <= 128:
        return dict(BLOCK_M=64, BLOCK_N=32, num_warps=4, num_stages=2, TMA=False)
    return dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3, TMA=True)


@triton.jit
def _plan_blocks(cu_ptr, seqlens_ptr, item_seq_ptr, item_start_ptr, count_ptr, sequences,
                 TOKENS: tl.constexpr, SEQS: tl.constexpr, BLOCK: tl.constexpr):
    """Every block's (sequence, first token), heaviest first, in one launch: each program
    places BLOCK slots of the blocks as they lie in order, by the rank of each block's work
    (the keys it visits: its last query's position, plus one). A sequence's blocks have works
    ``base + k * TOKENS``, so the blocks with more work are counted per sequence in closed
    form; ties go to the earlier sequence. ``count_ptr`` gets how many blocks there are."""
    seqs = tl.arange(0, SEQS)
    seq_ok = seqs < sequences
    q0 = tl.load(cu_ptr + seqs, mask=seq_ok, other=0)
    lengths = tl.load(cu_ptr + seqs + 1, mask=seq_ok, other=0) - q0
    blocks = (lengths + TOKENS - 1) // TOKENS
    ends = tl.cumsum(blocks, 0)
    total = tl.sum(blocks, 0)
    base = tl.load(seqlens_ptr + seqs, mask=seq_ok, other=0) - lengths + TOKENS  # the first block's work
    slot = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    seq = tl.sum((ends[None, :] <= slot[:, None]).to(tl.int32), 1)  # sequences whose blocks end before it
    mine = seqs[None, :] == seq[:, None]
    k = slot - tl.sum(tl.where(mine, (ends - blocks)[None, :], 0), 1)  # its index among its sequence's blocks
    work = tl.sum(tl.where(mine, base[None, :], 0), 1) + k * TOKENS
    above = work[:, None] - base[None, :]  # >= 0 where a sequence's first block has no more work
    steps = tl.where(above >= 0, above, 0) // TOKENS
    at_most = tl.where(above >= 0, tl.minimum(steps + 1, blocks[None, :]), 0)  # its blocks with no more work
    same = (above >= 0) & (above % TOKENS == 0) & (steps < blocks[None, :]) & (seqs[None, :] < seq[:, None])
    rank = tl.sum(blocks[None, :] - at_most, 1) + tl.sum(same.to(tl.int32), 1)
    real = slot < total
    tl.store(item_seq_ptr + rank, seq, mask=real)
    tl.store(item_start_ptr + rank, k * TOKENS, mask=real)
    if tl.program_id(0) == 0:
        tl.store(count_ptr, total)


PLAN_BLOCK = 64  # slots per program of _plan_blocks: a [64, 64] tile of int32 per step at 64 sequences


def _work_items(cu_seqlens_q, cache_seqlens, tokens_per_block: int, most: int):
    """(sequence, first token) of every block, heaviest first, made on the device in one launch
    (a call's time is GPU time from its first kernel to its last, and every small kernel
    before the attention adds microseconds of it): ``most`` slots, the first ``count`` of which are real (the grid is
    sized on the host without a sync)."""
    sequences = cache_seqlens.numel()
    plan = torch.empty(2 * most + 1, dtype=torch.int32, device=cu_seqlens_q.device)
    item_seq, item_start, count = plan[:most], plan[most:2 * most], plan[2 * most:]
    _plan_blocks[(triton.cdiv(most, PLAN_BLOCK),)](cu_seqlens_q, cache_seqlens, item_seq, item_start, count,
                                                   sequences, TOKENS=tokens_per_block,
                                                   SEQS=max(2, triton.next_power_of_2(sequences)), BLOCK=PLAN_BLOCK)
    return item_seq, item_start, count


def _launch_gluon(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale):
    tokens, hq, d = q.shape
    pages, page, hkv = k_cache.shape[0], k_cache.shape[2], k_cache.shape[1]
    group = hq // hkv
    group_p2 = triton.next_power_of_2(group)
    if 2 * 128 * CONSUMER_REGS + 128 * PRODUCER_REGS > 64512:
        raise ValueError("setmaxnreg cannot give the warpgroups more registers than the block has")
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
    _prefill_gluon[(most, hkv)](q, k_desc, v_desc, block_table, cache_seqlens, cu_seqlens_q, item_seq, item_start, o,
                                count, block_table.shape[1], float(softmax_scale) * 1.4426950408889634, HQ=hq,
                                HKV=hkv, GROUP=group, GROUP_P2=group_p2, D=d, PAGE=page, BLOCK_M=BLOCK_M,
                                BLOCK_N=block_n, STAGES=stages, OVERLAP=OVERLAP,
                                CONSUMER_REGS=CONSUMER_REGS,
                                PRODUCER_REGS=PRODUCER_REGS, num_warps=4)
    return o


def _launch_triton(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale):
    tokens, hq, d = q.shape
    hkv, page = k_cache.shape[1], k_cache.shape[2]
    group = hq // hkv
    group_p2 = triton.next_power_of_2(group)
    cfg = dict(_config(d, page, q.device))
    cfg["BLOCK_M"] = max(cfg["BLOCK_M"], group_p2)
    cfg["TMA"] = cfg["TMA"] and page % cfg["BLOCK_N"] == 0
    if cfg["TMA"] and q.is_cuda:
        # A descriptor made inside a kernel lives in global scratch that Triton asks for.
        triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=q.device))
    tokens_per_block = cfg["BLOCK_M"] // group_p2
    sequences = block_table.shape[0]
    most = tokens // tokens_per_block + sequences  # at most one partial block per sequence
    item_seq, item_start, count = _work_items(cu_seqlens_q, cache_seqlens, tokens_per_block, most)
    o = torch.empty_like(q)
    _prefill_triton[(most, hkv)](q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, item_seq, item_start,
                                 o, count, block_table.shape[1], k_cache.shape[0] * hkv * page, softmax_scale, HQ=hq,
                                 HKV=hkv, GROUP=group, GROUP_P2=group_p2, D=d, PAGE=page, **cfg)
    return o


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    if q.device.type != "cpu" and q.shape[2] >= GLUON_MIN_D:  # the GPU (or a compile check's meta tensors)
        return _launch_gluon(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale)
    return _launch_triton(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale)
