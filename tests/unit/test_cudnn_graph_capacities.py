"""The cuDNN experts prebuild a graph for every longest document (or chunk) a call can draw."""

from __future__ import annotations

import importlib.util

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from conftest import REPO


def _expert(env: str):
    spec = importlib.util.spec_from_file_location(f"{env}_expert_cuda", REPO / "expert" / env / "expert_cuda.py")
    expert = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(expert)  # capacities() needs neither a GPU nor cuDNN
    return expert


@pytest.mark.parametrize("env", ["attention_backward", "chunked_prefill"])
@given(tokens=st.integers(1, 65536), documents=st.integers(1, 64), data=st.data())
@settings(max_examples=200, deadline=None)
def test_the_cudnn_expert_prebuilds_a_graph_for_every_longest_document(env, tokens, documents, data):
    """No cuDNN graph may be built inside a timed call: whatever split of T tokens into B
    documents (or Q new tokens into B chunks) a call draws, a prebuilt capacity must hold
    its longest one."""
    expert = _expert(env)
    documents = min(documents, tokens)
    longest = data.draw(st.integers(-(-tokens // documents), tokens - documents + 1))
    capacities = expert.capacities(tokens, documents)
    assert capacities == sorted(capacities) and capacities[-1] >= tokens
    chosen = min(c for c in capacities if c >= longest)
    # ... and not a wastefully large one: at most twice the longest (or the whole).
    assert chosen < max(2 * longest, 128) or chosen == capacities[-1], (longest, capacities)
    assert len(capacities) <= 12
