"""chunked_prefill's tensor-core reference (``exact_pieces``: bf16 operands, P in three bf16
pieces, sums over key blocks) gives the plain fp32 reference's output to fp32 rounding: on
the CPU its products are the same exact products, so any gap is the algorithm's (a block's
mask, the softmax across blocks, a lost piece), not the hardware's."""

from __future__ import annotations

import pytest
import torch

from env_suites.chunked_prefill import exact_pieces, reference

NAMES = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "cu_seqlens_q", "softmax_scale")
SIZES = [{"B": 3, "Q": 40, "L": 96, "Hq": 4, "Hkv": 2, "D": 32, "P": 16},
         {"B": 4, "Q": 29, "L": 70, "Hq": 4, "Hkv": 4, "D": 16, "P": 16},
         {"B": 2, "Q": 300, "L": 700, "Hq": 8, "Hkv": 2, "D": 64, "P": 64}]


@pytest.mark.parametrize("key_block", [16, 48, 1024])  # many blocks, a ragged last one, one block
@pytest.mark.parametrize("dims", SIZES, ids=str)
def test_exact_pieces_match_the_plain_reference(dims, key_block, monkeypatch):
    monkeypatch.setattr(exact_pieces, "KEY_BLOCK", key_block)
    inputs = reference.make_inputs(dims, torch.Generator().manual_seed(key_block), torch.device("cpu"))
    args = [inputs[n] for n in NAMES]
    plain = reference.attention(*args)
    pieces = exact_pieces.attention(*args)
    assert float((pieces - plain).norm() / plain.norm()) < 2e-6


def test_rows_in_small_chunks_give_the_same_output(monkeypatch):
    """Query rows split into chunks of 3 (the budget's cut at long contexts) change nothing."""
    dims = SIZES[2]
    inputs = reference.make_inputs(dims, torch.Generator().manual_seed(7), torch.device("cpu"))
    args = [inputs[n] for n in NAMES]
    monkeypatch.setattr(exact_pieces, "KEY_BLOCK", 64)
    whole = exact_pieces.attention(*args)
    chunked = exact_pieces.attention(*args, rows_most=3)
    assert float((chunked - whole).norm() / whole.norm()) < 1e-6
