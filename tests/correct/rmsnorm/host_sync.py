"""Correct: the call waits on the device inside itself (it checks its input on the host, as
defensive code does). On the GPU its launches after that read reach the GPU only once the
work before it has run: the GPU waits for the host there, and a grade times that wait, as a
training step pays it."""

import torch


def kernel(x, weight, eps):
    xf = x.float()
    if not torch.isfinite(xf).all().item():  # a device-to-host read: the host waits for the GPU
        raise ValueError("the input holds a NaN or an infinity")
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)
