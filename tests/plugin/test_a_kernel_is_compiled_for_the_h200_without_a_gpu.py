"""nodus-sm90 compiles a kernel file's Triton launches (Gluon's included) for the H200 on a
machine without a GPU and reports each one: a kernel that fits passes, one whose tile needs more shared memory than
a block may use on sm_90 is named and fails the command, before it costs any device time."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

pytestmark = pytest.mark.grade

# An rmsnorm whose per-row product tile is a [256, 256] x [256, 256] bf16 dot with 4 stages:
# far past 227 KiB of shared memory on sm_90.
TOO_BIG = """
import torch, triton, triton.language as tl

@triton.jit
def _huge(x_ptr, o_ptr, BLOCK: tl.constexpr):
    r = tl.arange(0, BLOCK)
    acc = tl.zeros([BLOCK, BLOCK], tl.float32)
    for i in tl.range(0, 4, num_stages=4):
        a = tl.load(x_ptr + i * BLOCK * BLOCK + r[:, None] * BLOCK + r[None, :])
        acc = tl.dot(a, a, acc)
    tl.store(o_ptr + r[:, None] * BLOCK + r[None, :], acc.to(tl.bfloat16))

def kernel(x, weight, eps):
    out = torch.empty(256, 256, dtype=torch.bfloat16, device=x.device)
    _huge[(1,)](x, out, BLOCK=256, num_warps=8, num_stages=4)
    return x
"""

# An rmsnorm-shaped file whose kernel takes host-made TMA descriptors (passed by value).
BY_DESCRIPTORS = """
import torch, triton, triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

@triton.jit
def _copy(x_d, o_d, BLOCK: tl.constexpr):
    o_d.store([0, 0], x_d.load([0, 0]))

def kernel(x, weight, eps):
    out = torch.empty_like(x)
    _copy[(1,)](TensorDescriptor.from_tensor(x, [16, 64]), TensorDescriptor.from_tensor(out, [16, 64]), BLOCK=16)
    return out
"""

# A Gluon kernel (its layouts stated, Hopper's TMA, mbarrier and wgmma by hand) on descriptors
# that carry their shared-memory layout: x's first [64, 64] block squared, returned beside x.
GLUON = """
import torch
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
from triton.experimental.gluon.language.nvidia.hopper import tma, mbarrier, warpgroup_mma, warpgroup_mma_wait

# Triton 3.6 (the H200's) names the TMA load async_copy_global_to_shared; later ones async_load.
_tma_load = getattr(tma, "async_load", None) or tma.async_copy_global_to_shared

@gluon.jit
def _square(x_d, o_ptr, BLOCK: gl.constexpr):
    acc_layout: gl.constexpr = gl.NVMMADistributedLayout(version=[3, 0], warps_per_cta=[4, 1],
                                                         instr_shape=[16, BLOCK, 16])
    tile = gl.allocate_shared_memory(x_d.dtype, x_d.block_type.shape, x_d.layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    mbarrier.expect(bar, x_d.block_type.nbytes)
    _tma_load(x_d, [0, 0], bar, tile)
    mbarrier.wait(bar, 0)
    mbarrier.invalidate(bar)
    acc = warpgroup_mma(tile, tile, gl.zeros((BLOCK, BLOCK), gl.float32, acc_layout), is_async=True)
    acc = warpgroup_mma_wait(0, deps=(acc,))
    rows = gl.arange(0, BLOCK, layout=gl.SliceLayout(1, acc_layout))
    cols = gl.arange(0, BLOCK, layout=gl.SliceLayout(0, acc_layout))
    gl.store(o_ptr + rows[:, None] * BLOCK + cols[None, :], acc)

def kernel(x, weight, eps):
    layout = gl.NVMMASharedLayout.get_default_for([64, 64], gl.bfloat16)
    out = torch.empty(64, 64, dtype=torch.float32, device=x.device)
    _square[(1,)](TensorDescriptor.from_tensor(x, [64, 64], layout), out, BLOCK=64, num_warps=4)
    return x
"""


def _sm90(kernel) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pytest_nodus.commands.sm90", "rmsnorm", str(kernel)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)


def test_a_kernel_that_fits_is_reported_and_passes():
    done = _sm90(REPO / "env_suites" / "rmsnorm" / "starting_kernel.py")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "host code on meta tensors" in done.stdout and "regs" in done.stdout and "spill" in done.stdout


def test_a_kernel_past_the_shared_memory_of_a_block_is_named(tmp_path):
    kernel = tmp_path / "huge.py"
    kernel.write_text(TOO_BIG)
    done = _sm90(kernel)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "_huge" in done.stdout and "WILL NOT LAUNCH" in done.stdout


def test_a_kernel_taking_tma_descriptors_is_compiled(tmp_path):
    kernel = tmp_path / "by_descriptors.py"
    kernel.write_text(BY_DESCRIPTORS)
    done = _sm90(kernel)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "_copy" in done.stdout and "tma  2" in done.stdout


def test_a_gluon_kernel_is_compiled(tmp_path):
    kernel = tmp_path / "gluon_square.py"
    kernel.write_text(GLUON)
    done = _sm90(kernel)
    assert done.returncode == 0, done.stdout + done.stderr
    line = next(row for row in done.stdout.splitlines() if "_square" in row)
    assert "wgmma   0" not in line and "tma  1" in line, line
