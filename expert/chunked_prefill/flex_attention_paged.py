"""Context baseline for chunked_prefill on the GPU: FlexAttention over the paged cache.

FlexAttention (torch.compile of ``flex_attention``) with a mask over the cache's *physical*
layout: a key slot is visible to a query iff its page belongs to the query's sequence and the
slot's logical position (the page's place in that sequence's table, plus the slot) is at or
before the query's. Unowned pages belong to no sequence. It is timed beside the expert with
``--nodus-baselines`` and never enters the reward.

``prepare`` (run by the sandbox before the clock starts) fills the mask's per-call tables
(each query's sequence and position, each page's owner and first position), builds the block
mask, and lays K and V out as ``[1, Hkv, pages x P, D]`` (a copy of the cache: FlexAttention
takes one key axis); ``kernel`` (timed) is the attention alone. So the baseline is timed
without its per-call mask build and relayout, which a serving stack would pay: it flatters
FlexAttention. The mask function is made once per shape over persistent buffers that each
call overwrites, so Dynamo sees the same function and tensors every call.
"""

import torch
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
_flex = torch.compile(flex_attention, dynamic=False)
_masks: dict[tuple, tuple] = {}


def _mask_mod(q_tokens: int, pages: int, page: int, device):
    key = (q_tokens, pages, page)
    if key not in _masks:
        tables = {"q_seq": torch.zeros(q_tokens, dtype=torch.int32, device=device),
                  "q_pos": torch.zeros(q_tokens, dtype=torch.int32, device=device),
                  "page_seq": torch.zeros(pages, dtype=torch.int32, device=device),
                  "page_first": torch.zeros(pages, dtype=torch.int32, device=device)}

        def visible(b, h, q_idx, kv_idx):
            owner = kv_idx // page
            position = tables["page_first"][owner] + kv_idx % page
            return (tables["page_seq"][owner] == tables["q_seq"][q_idx]) & (position <= tables["q_pos"][q_idx])

        _masks[key] = (tables, visible)
    return _masks[key]


def fill(tables: dict, block_table, cache_seqlens, cu_seqlens_q, page: int) -> None:
    """The mask's per-call tables, from the call's inputs (on the device, no host sync)."""
    b, width = block_table.shape
    q_tokens = tables["q_seq"].numel()
    lengths = cu_seqlens_q[1:] - cu_seqlens_q[:-1]
    seq = torch.repeat_interleave(torch.arange(b, device=block_table.device, dtype=torch.int32), lengths,
                                  output_size=q_tokens)
    tables["q_seq"].copy_(seq)
    within = torch.arange(q_tokens, device=seq.device) - cu_seqlens_q[:-1].long()[seq.long()]
    tables["q_pos"].copy_(cache_seqlens[seq.long()] - lengths[seq.long()] + within)
    owned = torch.arange(width, device=seq.device)[None, :] * page < cache_seqlens[:, None]  # [B, width]
    tables["page_seq"].fill_(-1)
    pages = block_table.long()[owned]
    tables["page_seq"].index_put_((pages,), torch.arange(b, device=seq.device, dtype=torch.int32)[:, None]
                                  .expand(b, width)[owned])
    tables["page_first"].index_put_((pages,), (torch.arange(width, device=seq.device, dtype=torch.int32)[None, :]
                                               * page).expand(b, width)[owned])


def prepare(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, max_seqlen_q, softmax_scale):
    q_tokens, hq, d = q.shape
    pages, hkv, page, _ = k_cache.shape
    tables, visible = _mask_mod(q_tokens, pages, page, q.device)
    fill(tables, block_table, cache_seqlens, cu_seqlens_q, page)
    block_mask = create_block_mask(visible, None, None, q_tokens, pages * page, device=q.device,
                                   _compile=q.is_cuda)
    keys, values = (c.transpose(0, 1).reshape(hkv, pages * page, d).unsqueeze(0) for c in (k_cache, v_cache))
    return q.transpose(0, 1).unsqueeze(0), keys, values, block_mask, softmax_scale, hkv != hq


def kernel(queries, keys, values, block_mask, softmax_scale, grouped):
    attend = _flex if queries.is_cuda else flex_attention
    out = attend(queries, keys, values, block_mask=block_mask, scale=softmax_scale, enable_gqa=grouped)
    return out.squeeze(0).transpose(0, 1).contiguous()
