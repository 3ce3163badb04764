"""Forbidding by intent: each preset maps to its mechanisms, and an environment's are their union."""

from __future__ import annotations

from pytest_nodus import ATTENTION_LIBRARIES, CUDNN, FLEX_ATTENTION, TORCH_SDPA, ops
from pytest_nodus.grader.keepout import KeepOut


def test_attention_libraries_reach_every_mechanism():
    keep_out = KeepOut.of(ATTENTION_LIBRARIES)
    assert keep_out.libraries == ("libcudnn",)
    assert keep_out.torch_kernels == ("pytorch_flash", "fmha_cutlass")
    assert keep_out.templates == ("kernel/flex/templates",)
    assert {"flash_attn", "flash_attn_interface", "xformers", "transformer_engine", "flashinfer"} <= set(keep_out.packages)
    assert set(keep_out.audit) == {r"(?i)cudnn", r"^aten::_scaled_dot_product", r"^aten::scaled_dot_product",
                                   r"(?i)flash_attn", r"(?i)flex_attention", r"(?i)efficient_attention", r"(?i)fmha"}
    assert keep_out.audited


def test_the_union_keeps_each_mechanism_once_in_order():
    keep_out = KeepOut.of((CUDNN, TORCH_SDPA, CUDNN, FLEX_ATTENTION))
    assert keep_out.libraries == ("libcudnn",) and keep_out.audit.count(r"(?i)cudnn") == 1
    assert keep_out.audit[0] == r"(?i)cudnn"


def test_named_ops_are_audited_only():
    entry = ops(r"^aten::rms_norm$", name="torch's RMSNorm")
    keep_out = KeepOut.of((entry,))
    assert keep_out == KeepOut(audit=(r"^aten::rms_norm$",))


def test_nothing_forbidden_is_not_audited():
    assert not KeepOut.of(()).audited
