"""chunked_prefill's fp32 reference as one kernel, its products on tensor cores, exactly.

The grader's process runs it (never a sandbox), on a GPU only, checked against the plain fp32
reference (``reference.attention``) at each new shape's first call
(``exact_products.cross_checked``). The plain reference makes and reads ``[rows, context]``
scores in a dozen elementwise passes per chunk of rows, seconds per call at 128k contexts;
this kernel keeps every score in registers.

Per program: ``BLOCK_M`` query rows of one sequence and one query head, against every key up
to the last row's position, read through the block table (never past the sequence's context,
so garbage pages are never read). What keeps it fp32-exact:

- ``Q K^T`` takes the bf16 operands as they are: their products are exact in fp32, summed over
  ``D`` (at most 256 terms) by the tensor core in fp32.
- The softmax runs online in fp32 (running maximum and sum, rescaled per block of keys): the
  plain reference's softmax to fp32 rounding, in another order.
- ``P V`` takes P in three bf16 pieces (``exact_kernels.pieces_dot``: the pieces sum to P
  exactly above 2^-110), one product each, added in fp32 smallest first.

The cross-check bounds what this cannot: a tensor core that sums otherwise than assumed, or a
compiler that reorders, moves the distance past its limit and the plain reference answers.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from env_suites.chunked_prefill.reference import sequences
from pytest_nodus.grader.exact_kernels import pieces_dot

# The grader's reference on a GPU takes this path, checked against the plain one at every new
# shape's first call (exact_products.cross_checked): where they disagree, or this path fails,
# the plain one answers.
ON_CUDA = True


# Only the head dim and the tiles compile in (page size, head counts and table width are
# runtime arguments): each new constexpr value a fuzzed size drew would compile it again.
@triton.jit
def _rows(q_ptr, k_ptr, v_ptr, table_ptr, seqlens_ptr, cu_ptr, tiles_ptr, o_ptr, scale,
          table_width, page, hq, hkv, D: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    tile = tl.program_id(0)
    head = tl.program_id(1)
    b = tl.load(tiles_ptr + 2 * tile)
    r0 = tl.load(tiles_ptr + 2 * tile + 1)
    q0 = tl.load(cu_ptr + b)
    q1 = tl.load(cu_ptr + b + 1)
    context = tl.load(seqlens_ptr + b)
    first = context - (q1 - q0)  # the chunk's first absolute position
    kv_head = head // (hq // hkv)
    rows = r0 + tl.arange(0, BLOCK_M)
    live = rows < q1
    position = first + (rows - q0)
    d = tl.arange(0, D)
    q = tl.load(q_ptr + (rows[:, None].to(tl.int64) * hq + head) * D + d[None, :], mask=live[:, None], other=0.0)
    # Every row, live or not, sees key 0 (its position is at least 0): the maximum is finite
    # from the first block on, and no row divides by zero.
    top = tl.full([BLOCK_M], float("-inf"), tl.float32)
    total = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, D], tl.float32)
    seen = tl.minimum(first + (tl.minimum(r0 + BLOCK_M, q1) - q0), context)  # keys the last live row sees
    for n0 in range(0, seen, BLOCK_N):
        keys = n0 + tl.arange(0, BLOCK_N)
        inside = keys < seen
        physical = tl.load(table_ptr + b.to(tl.int64) * table_width + keys // page, mask=inside, other=0)
        slot = ((physical.to(tl.int64) * hkv + kv_head) * page + keys % page) * D
        k = tl.load(k_ptr + slot[:, None] + d[None, :], mask=inside[:, None], other=0.0)
        scores = tl.dot(q, tl.trans(k)) * scale
        visible = inside[None, :] & (keys[None, :] <= position[:, None])
        scores = tl.where(visible, scores, float("-inf"))
        new_top = tl.maximum(top, tl.max(scores, 1))
        rescale = tl.exp(top - new_top)
        p = tl.exp(scores - new_top[:, None])
        total = total * rescale + tl.sum(p, 1)
        v = tl.load(v_ptr + slot[:, None] + d[None, :], mask=inside[:, None], other=0.0)
        acc = acc * rescale[:, None] + pieces_dot(p, v)
        top = new_top
    out = acc / total[:, None]
    tl.store(o_ptr + (rows[:, None].to(tl.int64) * hq + head) * D + d[None, :], out, mask=live[:, None])



def _config(device: torch.device, d: int) -> tuple[int, int, dict]:
    """(BLOCK_M, BLOCK_N, launch options) on ``device``: 16 x 16 tiles in the interpreter (the
    smallest ``tl.dot`` takes). On a GPU, 8 warps: with 4, ptxas spills at D = 128 (255
    registers); at D = 256, 32 keys a block keep the spill to 56 bytes (704 at 64 keys),
    by nodus-sm90 for sm_90a under Triton 3.6."""
    if device.type == "cpu":
        return 16, 16, {}
    return 64, 32 if d >= 256 else 64, {"num_warps": 8, "num_stages": 2}


def attention(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale) -> torch.Tensor:
    """fp32 o ``[Tq, Hq, D]``, as ``reference.attention``."""
    tq, hq, d = q.shape
    hkv, page = k_cache.shape[1], k_cache.shape[2]
    if d & (d - 1) or d < 16:
        raise ValueError(f"the fused reference needs a power-of-two head dim of at least 16, not {d}")
    block_m, block_n, launch = _config(q.device, d)
    # Tiles of the longest contexts first: they take longest, and the GPU's tail is short ones.
    spans = sorted(sequences(cu_seqlens_q, cache_seqlens), key=lambda s: -s[3])
    tiles = torch.tensor([[b, r0] for b, q0, q1, _ in spans for r0 in range(q0, q1, block_m)] or [[0, 0]],
                         dtype=torch.int32, device=q.device)
    o = torch.zeros(tq, hq, d, dtype=torch.float32, device=q.device)
    if not spans:
        return o
    _rows[(tiles.shape[0], hq)](q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, tiles, o,
                                float(softmax_scale), block_table.shape[1], page, hq, hkv,
                                D=d, BLOCK_M=block_m, BLOCK_N=block_n, **launch)
    return o
