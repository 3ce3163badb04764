"""Expert for chunked_prefill on the GPU: cuDNN's fused SDPA forward over a paged KV cache,
through the cuDNN frontend graph API (the paged prefill path serving stacks call).

Layout (shared/GPU.md, verified on the H200 with frontend 1.32 over backend 9.19): K/V are
the cache itself, containers ``[num_pages, Hkv, page, D]`` described with their own dims
and strides, no copy; the block table goes in as ``[B, 1, pages, 1]`` for K and for V, with
``paged_attention_max_seq_len_kv`` the table's reach (pages x page). The packed new queries
are a ragged (THD) tensor of logical shape (B, Hq, S, D), strides (S*Hq*D, D, Hq*D, 1),
whose per-sequence base is a ragged offset [0, cumsum(len_q)] * Hq * D; the output the
same. Per-sequence lengths go in seq_len_q (the chunk) and seq_len_kv (the cache, chunk
included) with the padding mask on; bottom-right diagonal alignment with right bound 0 is
causal over a growing cache: query i of a chunk sees keys up to its own position.

Graphs are built outside the timed region. S (the padded per-sequence capacity of the
query tensor) must cover the longest chunk of each call, and chunks are drawn fresh on
every call, so the first call of a shape builds one graph per power-of-two capacity a
split of Q tokens into B chunks can need, and later calls take the smallest that fits.
A built plan is kept across grades on the host (pytest_nodus/trusted/cudnn_plans.py).
"""

from __future__ import annotations

import torch

from pytest_nodus.trusted.cudnn_plans import build as build_plan

cudnn = None  # imported on first use, after torch (shared/GPU.md)
_handle = None
_plans: dict[tuple, list["_Plan"]] = {}


class _Plan:
    def __init__(self, b, hq, d, s, k_cache, table_width, scale):
        global _handle, cudnn
        if cudnn is None:
            import cudnn
        if _handle is None:
            _handle = cudnn.create_handle()
        bf16, f32, i32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT, cudnn.data_type.INT32

        def declare():
            g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=_handle)
            self.q_offsets = g.tensor(name="q_off", dim=[b + 1, 1, 1, 1], stride=[1, 1, 1, 1],
                                      data_type=cudnn.data_type.INT64)
            self.q = g.tensor(name="q", dim=[b, hq, s, d], stride=[s * hq * d, d, hq * d, 1], data_type=bf16,
                              ragged_offset=self.q_offsets)
            self.k = g.tensor(name="k_cache", dim=list(k_cache.shape), stride=list(k_cache.stride()), data_type=bf16)
            self.v = g.tensor(name="v_cache", dim=list(k_cache.shape), stride=list(k_cache.stride()), data_type=bf16)

            def per_sequence(name, width=1):
                return g.tensor(name=name, dim=[b, 1, width, 1], stride=[width, width, 1, 1], data_type=i32)

            self.seq_len_q, self.seq_len_kv = per_sequence("seq_len_q"), per_sequence("seq_len_kv")
            self.k_table, self.v_table = per_sequence("k_table", table_width), per_sequence("v_table", table_width)
            self.o, _stats = g.sdpa(
                name="sdpa", q=self.q, k=self.k, v=self.v, attn_scale=scale, generate_stats=False,
                use_padding_mask=True, seq_len_q=self.seq_len_q, seq_len_kv=self.seq_len_kv,
                diagonal_alignment=cudnn.diagonal_alignment.BOTTOM_RIGHT, diagonal_band_right_bound=0,
                paged_attention_k_table=self.k_table, paged_attention_v_table=self.v_table,
                paged_attention_max_seq_len_kv=table_width * k_cache.shape[2])
            self.o.set_output(True).set_dim([b, hq, s, d]).set_stride([s * hq * d, d, hq * d, 1])
            self.o.set_ragged_offset(self.q_offsets).set_data_type(bf16)
            return g

        # Everything declare() reads: the plan stored under it is this graph's.
        description = ("chunked_prefill sdpa", b, hq, d, s, tuple(k_cache.shape), tuple(k_cache.stride()),
                       table_width, float(scale))
        self.graph = build_plan(declare, _handle, description, [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        self.workspace_bytes = self.graph.get_workspace_size()
        self.capacity = s

    def run(self, q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, o) -> None:
        hq, d = q.shape[1], q.shape[2]
        b, width = block_table.shape
        table = block_table.view(b, 1, width, 1)
        cudnn.set_stream(_handle, torch.cuda.current_stream().cuda_stream)
        self.graph.execute({
            self.q: q, self.k: k_cache, self.v: v_cache, self.o: o,
            self.q_offsets: cu_seqlens_q.to(torch.int64).view(-1, 1, 1, 1) * (hq * d),
            self.seq_len_q: (cu_seqlens_q[1:] - cu_seqlens_q[:-1]).view(b, 1, 1, 1),
            self.seq_len_kv: cache_seqlens.view(b, 1, 1, 1), self.k_table: table, self.v_table: table,
        }, _workspace(self.workspace_bytes, q.device), handle=_handle)


def capacities(tokens: int, sequences: int) -> list[int]:
    """Power-of-two capacities (at least 64, at most the tokens rounded up to 64) that the
    longest of ``sequences`` chunks splitting ``tokens`` tokens can need."""
    top, shortest_longest = -(-tokens // 64) * 64, -(-tokens // sequences)
    caps, s = [], 64
    while s < top:
        if s >= shortest_longest:
            caps.append(s)
        s *= 2
    return caps + [top]


def _workspace(nbytes: int, device) -> torch.Tensor:
    """The call's workspace, from the caching allocator, freed when the call returns, as
    PyTorch's own cuDNN attention allocates it. A buffer kept per shape would stay in the
    sandbox's output heap across sizes and push later sizes' outputs out of it, into a copy
    inside their timed window (docs/timing.md)."""
    return torch.empty(max(nbytes, 1), dtype=torch.uint8, device=device)


def kernel(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    tokens, hq, d = q.shape
    b, width = block_table.shape
    shape = (tokens, hq, d, b, width, tuple(k_cache.shape), float(softmax_scale))
    if shape not in _plans:
        _plans[shape] = [_Plan(b, hq, d, s, k_cache, width, softmax_scale) for s in capacities(tokens, b)]
    plan = next(p for p in _plans[shape] if p.capacity >= max_seqlen_q)
    o = torch.empty_like(q)
    plan.run(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, o)
    return o
