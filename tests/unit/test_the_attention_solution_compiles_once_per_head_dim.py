"""The attention solution compiles each of its kernels once per head dim, whatever the size's
head counts, length, window or document split: every timed size of one head dim asks Triton's
JIT for the same binaries, as nodus-sm90 captures its launches on meta tensors
(pytest_nodus/commands/sm90.py). A kernel specialised on a head count or an odd length would
compile again at each such size of a grade, seconds of the submission's first calls each."""

from __future__ import annotations

import math
from collections import defaultdict

import torch
from conftest import REPO

from env_suites.attention_backward.environment import document_lengths
from pytest_nodus.commands import sm90
from pytest_nodus.grader.api import installed_environments
from pytest_nodus.grader.environment import load_hidden_sizes


def _arguments(dims: dict) -> list:
    """The call's arguments on the meta device: their shapes and the scalars are all the
    launches depend on (the environment's own inputs would run its fp32 forward on the CPU)."""
    t, hq, hkv, d = dims["T"], dims["Hq"], dims["Hkv"], dims["D"]
    lengths = document_lengths(t, dims["B"], torch.Generator().manual_seed(11))
    cu_seqlens = torch.tensor([0, *torch.tensor(lengths).cumsum(0).tolist()], dtype=torch.int32, device="meta")

    def rows(heads):
        return torch.empty(t, heads, d, dtype=torch.bfloat16, device="meta")

    lse = torch.empty(hq, t, dtype=torch.float32, device="meta")
    return [rows(hq), rows(hkv), rows(hkv), rows(hq), lse, rows(hq), cu_seqlens, max(lengths), dims["W"],
            1.0 / math.sqrt(d)]


def test_the_attention_solution_compiles_once_per_head_dim():
    env = installed_environments()["attention_backward"].load()
    assert [spec.name for spec in env.contract.inputs] == ["q", "k", "v", "o", "lse", "do", "cu_seqlens",
                                                           "max_seqlen", "window", "softmax_scale"]
    sizes = [*env.profile("cuda").sizes, *load_hidden_sizes(REPO / "sealed_fixtures", env, "cuda")]
    module = sm90.load_for_the_gpu(REPO / "expert" / "attention_backward" / "solution.py")
    by_head_dim = defaultdict(list)
    for dims in sizes:
        by_head_dim[dims["D"]].append((dims, sm90.variants(env, module, dims, _arguments(dims))))
    assert set(by_head_dim) == {64, 128, 256}
    for d, seen in by_head_dim.items():
        first_dims, first = seen[0]
        assert first, f"D = {d}: no launch captured"
        for dims, binaries in seen[1:]:
            assert binaries == first, (f"D = {d}: {dims} needs binaries {first_dims} does not: "
                                       f"{sorted(name for name, _ in binaries - first)}")
