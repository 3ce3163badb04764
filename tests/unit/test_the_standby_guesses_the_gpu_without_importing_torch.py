"""The expert's standby is told whether to preload its compiler from a guess at the grade's
device made without importing torch (grader/standby.py gpu_visible): an import there would
hold every standby's spawn for the grader's own import."""

from __future__ import annotations

import os

import pytest
import torch

from pytest_nodus.grader import standby


@pytest.fixture
def gpu_host(tmp_path):
    """A /dev with an NVIDIA device node and a torch folder with its CUDA library."""
    dev, torch_dir = tmp_path / "dev", tmp_path / "torch"
    dev.mkdir()
    (dev / "nvidia0").touch()
    (dev / "nvidiactl").touch()
    (torch_dir / "lib").mkdir(parents=True)
    (torch_dir / "lib" / "libtorch_cuda.so").touch()
    return str(dev), str(torch_dir)


def test_a_gpu_host_with_a_cuda_torch_is_guessed_a_gpu(gpu_host):
    dev, torch_dir = gpu_host
    assert standby.gpu_visible(dev, torch_dir, environ={})
    assert standby.gpu_visible(dev, torch_dir, environ={"CUDA_VISIBLE_DEVICES": "0"})


@pytest.mark.parametrize("hidden", ["", " ", "-1", "-1,0"])
def test_gpus_hidden_by_cuda_visible_devices_are_no_gpu(gpu_host, hidden):
    dev, torch_dir = gpu_host
    assert not standby.gpu_visible(dev, torch_dir, environ={"CUDA_VISIBLE_DEVICES": hidden})


def test_no_device_node_is_no_gpu(gpu_host, tmp_path):
    _, torch_dir = gpu_host
    (tmp_path / "empty_dev").mkdir()
    (tmp_path / "empty_dev" / "nvidiactl").touch()  # the control node alone: no GPU
    assert not standby.gpu_visible(str(tmp_path / "empty_dev"), torch_dir, environ={})


def test_a_torch_built_without_cuda_is_no_gpu(gpu_host):
    dev, torch_dir = gpu_host
    os.remove(os.path.join(torch_dir, "lib", "libtorch_cuda.so"))
    assert not standby.gpu_visible(dev, torch_dir, environ={})


def test_the_guess_agrees_with_torch_on_this_host():
    assert standby.gpu_visible() == torch.cuda.is_available()
    assert bool(standby.preload("expert", "auto")) == torch.cuda.is_available()
