"""An arena the driver cannot create is the grader's own allocation failing.

Several grades on one GPU can leave too little memory for a sandbox's arena; the driver
then answers cuMemCreate with CUDA_ERROR_OUT_OF_MEMORY. That must reach the grader as
torch.OutOfMemoryError, which a size records as ``grader_out_of_memory`` (a code a
pipeline retries on), not as an unexplained failure with no result.
"""

import pytest
import torch

from pytest_nodus.shared import vmm


def test_the_drivers_out_of_memory_is_torchs():
    with pytest.raises(torch.OutOfMemoryError, match="cuMemCreate"):
        vmm._check(2, "cuMemCreate")


def test_other_driver_errors_stay_errors():
    with pytest.raises(RuntimeError) as raised:
        vmm._check(1, "cuMemMap")
    assert not isinstance(raised.value, torch.OutOfMemoryError)
