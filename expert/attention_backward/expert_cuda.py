"""Expert for attention_backward on the GPU: cuDNN's fused SDPA backward through the cuDNN
frontend graph API (the kernel TransformerEngine and Megatron run on Hopper).

Layout (shared/GPU.md, verified on the H200 with frontend 1.32 over backend 9.19): the
packed [T, H, D] tensors are described as ragged (THD) tensors of logical shape
(B, H, S, D) with strides (S*H*D, D, H*D, 1) whose per-document base comes from a ragged
offset table [0, cumsum(lengths)] * H * D; the per-document lengths go in seq_len_q/kv
with the padding mask on. lse is given as [Hq, T]; cuDNN's ragged stats are token-major
([T, Hq] in memory), so each call transposes it (Hq*T*4 bytes, a few microseconds).
Causal: a diagonal band with right bound 0 (top-left aligned); window W: left bound W.
Grouped KV heads are native (cuDNN reduces dK/dV over the group itself).

Graphs are built outside the timed region. S (the padded per-document capacity the graph
is built for) must cover the longest document of each call, and documents are drawn fresh
on every call, so the first call of a shape builds one graph per power-of-two capacity
that a split of T into B documents can need (from T/B up to T) and later calls pick the
smallest that fits: no graph is ever built inside a timed call.
A built plan is kept across grades on the host (pytest_nodus/trusted/cudnn_plans.py).
"""

from __future__ import annotations

import torch

from pytest_nodus.trusted.cudnn_plans import build as build_plan

cudnn = None  # imported on first use, after torch (shared/GPU.md): capacities() needs no GPU
_handle = None
_plans: dict[tuple, "_Plan"] = {}


class _Plan:
    """One built cuDNN graph, its workspace size and the graph tensors to bind."""

    def __init__(self, t, hq, hkv, d, b, s, window, scale):
        global _handle, cudnn
        if cudnn is None:
            import cudnn
        if _handle is None:
            _handle = cudnn.create_handle()
        bf16, f32 = cudnn.data_type.BFLOAT16, cudnn.data_type.FLOAT

        def declare():
            g = cudnn.pygraph(io_data_type=bf16, intermediate_data_type=f32, compute_data_type=f32, handle=_handle)

            def offsets(name):
                return g.tensor(name=name, dim=[b + 1, 1, 1, 1], stride=[1, 1, 1, 1],
                                data_type=cudnn.data_type.INT64)

            def packed(name, heads, offset):
                return g.tensor(name=name, dim=[b, heads, s, d], stride=[s * heads * d, d, heads * d, 1],
                                data_type=bf16, ragged_offset=offset)

            self.q_offsets, self.kv_offsets = offsets("q_off"), offsets("kv_off")
            self.stats_offsets = offsets("stats_off")
            self.seq_len = g.tensor(name="seq_len", dim=[b, 1, 1, 1], stride=[1, 1, 1, 1],
                                    data_type=cudnn.data_type.INT32)
            self.q, self.o, self.do = (packed(n, hq, self.q_offsets) for n in ("q", "o", "do"))
            self.k, self.v = (packed(n, hkv, self.kv_offsets) for n in ("k", "v"))
            # Token-major stats: element (b, h, s) at offset + s*Hq + h.
            self.stats = g.tensor(name="stats", dim=[b, hq, s, 1], stride=[s * hq, 1, hq, 1], data_type=f32,
                                  ragged_offset=self.stats_offsets)
            total = -(-t // 64) * 64
            mask = {"diagonal_alignment": cudnn.diagonal_alignment.TOP_LEFT, "diagonal_band_right_bound": 0}
            if window > 0:
                mask["diagonal_band_left_bound"] = window
            self.dq, self.dk, self.dv = g.sdpa_backward(
                name="sdpa_backward", q=self.q, k=self.k, v=self.v, o=self.o, dO=self.do, stats=self.stats,
                attn_scale=scale, use_padding_mask=True, seq_len_q=self.seq_len, seq_len_kv=self.seq_len,
                max_total_seq_len_q=total, max_total_seq_len_kv=total, **mask)
            for tensor, heads, offset in ((self.dq, hq, self.q_offsets), (self.dk, hkv, self.kv_offsets),
                                          (self.dv, hkv, self.kv_offsets)):
                tensor.set_output(True).set_dim([b, heads, s, d]).set_stride([s * heads * d, d, heads * d, 1])
                tensor.set_ragged_offset(offset).set_data_type(bf16)
            return g

        # Everything declare() reads: the plan stored under it is this graph's.
        description = ("attention_backward sdpa_backward", t, hq, hkv, d, b, s, window, float(scale))
        self.graph = build_plan(declare, _handle, description, [cudnn.heur_mode.A, cudnn.heur_mode.FALLBACK])
        self.workspace_bytes = self.graph.get_workspace_size()
        self.capacity = s

    def run(self, q, k, v, o, lse, do, cu_seqlens, dq, dk, dv) -> None:
        hq, hkv, d = q.shape[1], k.shape[1], q.shape[2]
        starts = cu_seqlens.to(torch.int64).view(-1, 1, 1, 1)
        lengths = (cu_seqlens[1:] - cu_seqlens[:-1]).view(-1, 1, 1, 1)
        stats = lse.t().contiguous()  # [T, Hq]: cuDNN's token-major ragged stats
        cudnn.set_stream(_handle, torch.cuda.current_stream().cuda_stream)
        self.graph.execute({
            self.q: q, self.k: k, self.v: v, self.o: o, self.do: do, self.stats: stats, self.seq_len: lengths,
            self.q_offsets: starts * (hq * d), self.kv_offsets: starts * (hkv * d), self.stats_offsets: starts * hq,
            self.dq: dq, self.dk: dk, self.dv: dv,
        }, _workspace(self.workspace_bytes, q.device), handle=_handle)


def capacities(t: int, documents: int) -> list[int]:
    """Power-of-two capacities (at least 64, at most T rounded up to 64) that the longest of
    ``documents`` documents splitting ``t`` tokens can need."""
    top, shortest_longest = -(-t // 64) * 64, -(-t // documents)
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


def kernel(q, k, v, o, lse, do, cu_seqlens, max_seqlen, window, softmax_scale):
    t, hq, d = q.shape
    hkv, b = k.shape[1], cu_seqlens.numel() - 1
    shape = (t, hq, hkv, d, b, window, float(softmax_scale))
    if shape not in _plans:
        _plans[shape] = [_Plan(t, hq, hkv, d, b, s, window, softmax_scale) for s in capacities(t, b)]
    plan = next(p for p in _plans[shape] if p.capacity >= max_seqlen)
    dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
    plan.run(q, k, v, o, lse, do, cu_seqlens, dq, dk, dv)
    return dq, dk, dv
