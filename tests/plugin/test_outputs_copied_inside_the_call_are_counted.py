"""Every grade counts, per size, the timed calls whose outputs the grader read from their
receipts, where the harness copied them inside the timed call (``outputs_copied``, and
``expert_outputs_copied`` for the expert's calls of the same rounds): a kernel that pays a
copy per call is told so. On the CPU a non-contiguous output is copied; on the GPU an output
outside the output heap (docs/timing.md)."""

from __future__ import annotations

import json

import jsonschema
import pytest
from conftest import REPO

from pytest_nodus.grader.report import SCHEMA_PATH

pytestmark = pytest.mark.grade

CONTIGUOUS = REPO / "tests" / "correct" / "rmsnorm" / "torch_ops.py"

# The same math, its output a transposed view of a [N, M] buffer: correct, the contract's
# shape and dtype, and not contiguous, so the harness copies it into its receipt.
TRANSPOSED = '''
import torch


def kernel(x, weight, eps):
    xf = x.float()
    y = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
    return y.t().contiguous().t()
'''


def _timed_sizes(document):
    sizes = [s for s in document["sizes"] if s["kind"] == "public"]
    assert sizes
    return sizes


def test_a_non_contiguous_output_is_counted_at_every_timed_call(grade, tmp_path):
    kernel = tmp_path / "transposed.py"
    kernel.write_text(TRANSPOSED)
    graded = grade(kernel, "-k", "public-0 or public-1")
    document = graded.document
    jsonschema.validate(document, json.loads(SCHEMA_PATH.read_text()))
    assert document["status"] == "correct"
    for size in _timed_sizes(document):
        assert size["outputs_copied"] == len(size["timed_calls"]["submission"]) > 0
        assert size["expert_outputs_copied"] == 0  # the CPU expert's output is contiguous
    # The kernel author reads it in the terminal too.
    assert "outputs copied inside the timed call (timed calls, submission/expert): public-0" in graded.text


def test_outputs_read_where_the_kernel_wrote_them_are_not_counted(grade):
    graded = grade(CONTIGUOUS, "-k", "public-0 or public-1")
    assert graded.document["status"] == "correct"
    for size in _timed_sizes(graded.document):
        assert size["outputs_copied"] == 0 and size["expert_outputs_copied"] == 0
    assert "outputs copied inside the timed call" not in graded.text
