"""Every chunked_prefill batch of three sequences or more holds a one-token (decode-like)
chunk, on every call: a kernel that skips those sequences must fail every size, not only
the sizes whose batches happen to draw one."""

from __future__ import annotations

import pytest
import torch

from env_suites.chunked_prefill.reference import chunk_lengths


@pytest.mark.parametrize("sequences,q_tokens", [(3, 40), (8, 8192), (16, 16384), (64, 4096)])
def test_a_batch_holds_a_one_token_chunk_on_every_call(sequences, q_tokens):
    generator = torch.Generator().manual_seed(sequences)
    for _ in range(300):
        lengths = chunk_lengths(q_tokens, sequences, generator)
        assert sum(lengths) == q_tokens and min(lengths) >= 1
        assert 1 in lengths[1:], lengths


def test_the_short_chunks_are_not_all_one_token():
    generator = torch.Generator().manual_seed(0)
    lengths = [n for _ in range(50) for n in chunk_lengths(8192, 8, generator)[1:]]
    assert max(lengths) > 1
