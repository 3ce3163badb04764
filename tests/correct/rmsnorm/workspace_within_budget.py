"""Correct: holds a 4 GiB fp32 workspace for its whole life, taken at import outside any call,
inside the task card's 6 GiB of GPU memory with room for its temporaries (the wall's
false-positive check: grader/gpu_memory_wall.py)."""

import torch

WORKSPACE_BYTES = 4 << 30  # with its temporaries past the heap and code, under the 7 GiB limit
_workspace = torch.empty(WORKSPACE_BYTES // 4, dtype=torch.float32, device="cuda") if torch.cuda.is_available() else None


def kernel(x, weight, eps):
    if _workspace is not None and x.numel() <= _workspace.numel():
        xf = _workspace[: x.numel()].view(x.shape)
        xf.copy_(x)
    else:
        xf = x.float()
    rstd = torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (xf * rstd * weight.float()).to(torch.bfloat16)
