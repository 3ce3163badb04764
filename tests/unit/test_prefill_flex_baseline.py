"""chunked_prefill's FlexAttention baseline (GPU only in a grade) masks the physical page
layout right: on the CPU, eager FlexAttention over its mask matches the fp32 reference to
bf16 rounding, with pages shuffled, garbage in unowned slots and table entries past each
sequence's end pointing at other sequences' pages."""

from __future__ import annotations

import importlib.util
import warnings

import torch

from conftest import REPO
from env_suites.chunked_prefill import reference

NAMES = ("q", "k_cache", "v_cache", "block_table", "cache_seqlens", "cu_seqlens_q", "max_seqlen_q", "softmax_scale")


def test_the_flex_baseline_matches_the_reference():
    spec = importlib.util.spec_from_file_location("flex_paged", REPO / "expert" / "chunked_prefill" / "flex_attention_paged.py")
    flex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(flex)
    for seed, dims in enumerate([{"B": 3, "Q": 45, "L": 200, "Hq": 8, "Hkv": 4, "D": 32, "P": 16},
                                 {"B": 5, "Q": 5, "L": 130, "Hq": 4, "Hkv": 1, "D": 16, "P": 16}]):
        inputs = reference.make_inputs(dims, torch.Generator().manual_seed(seed), torch.device("cpu"))
        expected = reference.attention(*(inputs[n] for n in NAMES if n != "max_seqlen_q"))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # eager flex_attention warns that it is unfused
            out = flex.kernel(*flex.prepare(*(inputs[n] for n in NAMES)))
        assert float((out.float() - expected).norm() / expected.norm()) < 6e-3, dims
