"""Correct: captures its own CUDA graph for each new input and replays it (plain torch on the CPU)."""

import torch


def _compute(x, weight, eps, out):
    xf = x.float()
    out.copy_((xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16))


def kernel(x, weight, eps):
    y = torch.empty_like(x)
    if x.device.type != "cuda":
        _compute(x, weight, eps, y)
        return y
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        _compute(x, weight, eps, y)  # warm-up run on the capture stream, as CUDA graphs require
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        _compute(x, weight, eps, y)
    graph.replay()
    return y
