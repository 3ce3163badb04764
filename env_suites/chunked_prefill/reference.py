"""The paged KV cache of chunked prefill, and its fp32 reference.

Inputs (``make_inputs``): B sequences, each with a chunk of new tokens (``len_q(b)``, packed
into ``q`` by ``cu_seqlens_q``) at the end of ``cache_seqlens[b]`` cached tokens (the
chunk's own K/V already written). One sequence is the long prefill: its chunk takes most of
the size's Q tokens and ends at the size's longest context L. The others are short chunks
(a quarter of them, and at least one wherever there are two or more, a single token:
decode-like), each over a context drawn up to L, and a quarter of them whole prompts (no
cached prefix). The cache is paged: ``k_cache``/``v_cache`` are ``[num_pages, Hkv, page, D]``,
pages are handed out in a random physical order, some pages belong to no sequence, and every
slot a sequence does not own (unowned pages, the tail of its last page, table entries past
its last page) holds garbage: large finite values, so a kernel that reads one gets a wrong
answer (never NaN: a correct kernel that multiplies a masked V row by a zero probability
must stay finite).

Reference (``attention``): per sequence, its keys gathered from the pages in fp32; per
chunk of query rows, the scores of each KV head's query-head group against the keys they
can see. The largest temporaries are ``Hq x rows x keys`` fp32 (about four alive at once);
rows shrink so those stay under ``BUDGET_BYTES`` (1 GiB): at L = 131072 and Hq = 32 that is
16 rows per chunk, and the gathered keys and values of one sequence add 2 x L x Hkv x D x 4 B
(1 GiB at Hkv = 8, D = 128). ``fused_reference.py`` is the same reference as one kernel with its
products on tensor cores, exactly.
"""

from __future__ import annotations

import torch

BUDGET_BYTES = 1 << 30
GARBAGE_SCALE = 30.0  # |garbage| ~ 30 against unit-variance keys: it dominates any softmax it enters
WHOLE_PROMPT_SHARE = 0.25  # of the short chunks: no cached prefix
SHORT_SHARE = 0.25  # the short chunks together take at most this share of Q
# Of the short chunks, this share are one token (decode-like), and at least one whenever
# there are two short chunks or more: every call must test the decode path. Drawn only
# uniformly from 1 to ~300 tokens (B = 8), a batch holds a one-token chunk ~2% of the time.
DECODE_SHARE = 0.25


def chunk_lengths(q_tokens: int, sequences: int, generator: torch.Generator) -> list[int]:
    """``sequences`` non-empty chunks summing to ``q_tokens``: the first (before shuffling)
    is the long prefill, the others short, each at most SHORT_SHARE * Q / (B - 1), a share
    of them a single token."""
    if sequences == 1:
        return [q_tokens]
    g = {"generator": generator, "device": generator.device}
    longest_short = _longest_short(q_tokens, sequences)
    shorts = torch.randint(1, longest_short + 1, (sequences - 1,), **g)
    decode = torch.rand(sequences - 1, **g) < DECODE_SHARE
    if sequences > 2:
        decode[int(torch.randint(0, sequences - 1, (), **g))] = True
    shorts = torch.where(decode, torch.ones_like(shorts), shorts)
    return [q_tokens - int(shorts.sum()), *shorts.tolist()]


def _longest_short(q_tokens: int, sequences: int) -> int:
    return max(1, int(SHORT_SHARE * q_tokens) // (sequences - 1))


def shortest_long_chunk(q_tokens: int, sequences: int) -> int:
    """The long prefill's chunk is never shorter than this (for a lower bound on the work)."""
    return q_tokens if sequences == 1 else q_tokens - (sequences - 1) * _longest_short(q_tokens, sequences)


# The cache's page count, the same for every call of a size (the grader sizes its memory
# before it draws): room for every sequence at the longest context, and an eighth more.
CACHE_PAGES = "B * ((L + P - 1) // P) + (B * ((L + P - 1) // P) + 7) // 8"
TABLE_WIDTH = "(L + P - 1) // P"


def cache_pages(dims) -> int:
    return int(eval(CACHE_PAGES, {"__builtins__": {}}, dict(dims)))


def make_inputs(dims, generator: torch.Generator, device: torch.device) -> dict:
    """The contract's inputs for one call (see the module docstring), drawn on the
    generator's device."""
    b, q_tokens, longest, hq, hkv, d, page = (dims[n] for n in ("B", "Q", "L", "Hq", "Hkv", "D", "P"))
    g = {"generator": generator, "device": generator.device}
    lengths = chunk_lengths(q_tokens, b, generator)
    contexts = [longest]  # the long prefill ends at the longest context
    for n in lengths[1:]:
        whole = torch.rand((), **g).item() < WHOLE_PROMPT_SHARE
        contexts.append(n if whole else int(torch.randint(n, longest + 1, (), **g)))
    order = torch.randperm(b, **g).tolist()  # the long one anywhere in the batch
    lengths, contexts = [lengths[i] for i in order], [contexts[i] for i in order]
    table_width = -(-longest // page)
    owned = [-(-c // page) for c in contexts]
    num_pages = cache_pages(dims)
    physical = torch.randperm(num_pages, **g).to(torch.int32)  # the first sum(owned) are handed out
    # Slots past a sequence's last page hold valid page ids that belong to someone else.
    block_table = torch.randint(0, num_pages, (b, table_width), **g, dtype=torch.int32)
    start = 0
    for i, n in enumerate(owned):
        block_table[i, :n] = physical[start:start + n]
        start += n
    # Where each owned token lies: (physical page, slot in it), sequence after sequence.
    positions = torch.cat([torch.arange(c, device=generator.device) for c in contexts])
    sequence = torch.cat([torch.full((c,), i, device=generator.device) for i, c in enumerate(contexts)])
    pages, slots = block_table[sequence, positions // page].long(), positions % page

    def cache():
        values = GARBAGE_SCALE * torch.randn(num_pages, hkv, page, d, **g)
        values[pages, :, slots] = torch.randn(len(positions), hkv, d, **g)
        return values.to(torch.bfloat16)

    k_cache, v_cache = cache(), cache()
    q = torch.randn(q_tokens, hq, d, **g).to(torch.bfloat16)
    cu = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32)
    return {"q": q.to(device), "k_cache": k_cache.to(device), "v_cache": v_cache.to(device),
            "block_table": block_table.to(device), "cache_seqlens": torch.tensor(contexts, dtype=torch.int32).to(device),
            "cu_seqlens_q": cu.to(device), "max_seqlen_q": max(lengths), "softmax_scale": d ** -0.5}


def gathered(cache: torch.Tensor, table_row: torch.Tensor, tokens: int,
             dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """One sequence's first ``tokens`` cached rows, ``[Hkv, tokens, D]``."""
    page = cache.shape[2]
    pages = cache[table_row[: -(-tokens // page)].long()].to(dtype)  # [n, Hkv, page, D]
    return pages.transpose(0, 1).reshape(cache.shape[1], -1, cache.shape[3])[:, :tokens]


def sequences(cu_seqlens_q, cache_seqlens):
    """``(b, q0, q1, context)`` per sequence with new tokens: its chunk's rows ``[q0, q1)`` of
    ``q`` and its cached tokens, the chunk's own included."""
    bounds, contexts = cu_seqlens_q.tolist(), cache_seqlens.tolist()
    for b, context in enumerate(contexts):
        if bounds[b + 1] > bounds[b]:
            yield b, bounds[b], bounds[b + 1], context


def attention(q, k_cache, v_cache, block_table, cache_seqlens, cu_seqlens_q, softmax_scale,
              rows_most: int = 256, rounded: bool = False) -> torch.Tensor:
    """fp32 o ``[Tq, Hq, D]``. ``rounded``: P rounded to bf16 before its product with V and o
    to bf16, where a FlashAttention-style bf16 kernel rounds (``Environment.rounded_reference``)."""
    tq, hq, d = q.shape
    hkv = k_cache.shape[1]
    group = hq // hkv
    o = torch.zeros(tq, hq, d, dtype=torch.float32, device=q.device)
    for b, q0, q1, context in sequences(cu_seqlens_q, cache_seqlens):
        keys, values = gathered(k_cache, block_table[b], context), gathered(v_cache, block_table[b], context)
        first = context - (q1 - q0)  # the chunk's first absolute position
        rows = max(1, min(rows_most, BUDGET_BYTES // (16 * hq * context)))
        for r0 in range(q0, q1, rows):
            r1 = min(r0 + rows, q1)
            n, seen = r1 - r0, first + (r1 - q0)  # keys up to the last row's position
            qs = q[r0:r1].float().view(n, hkv, group, d).permute(1, 2, 0, 3).reshape(hkv, group * n, d)
            scores = softmax_scale * qs @ keys[:, :seen].transpose(1, 2)  # [Hkv, group * n, seen]
            position = first + (r0 - q0) + torch.arange(n, device=q.device)
            visible = torch.arange(seen, device=q.device)[None, :] <= position[:, None]  # [n, seen]
            scores = scores.view(hkv, group, n, seen).masked_fill(~visible, float("-inf")).view(hkv, group * n, seen)
            p = torch.softmax(scores, dim=-1)
            if rounded:
                p = p.to(torch.bfloat16).float()
            out = (p @ values[:, :seen]).view(hkv, group, n, d).permute(2, 0, 1, 3).reshape(n, hq, d)
            o[r0:r1] = out
    return o.to(torch.bfloat16).float() if rounded else o
