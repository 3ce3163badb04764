"""Correct: splits the rows over two side streams and joins them before returning."""

import torch


def _rows(x, weight, eps):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps) * weight.float()).to(torch.bfloat16)


_streams = None


def kernel(x, weight, eps):
    if x.device.type != "cuda":
        return _rows(x, weight, eps)
    global _streams
    _streams = _streams or (torch.cuda.Stream(), torch.cuda.Stream())
    current = torch.cuda.current_stream()
    y = torch.empty_like(x)
    half = x.shape[0] // 2
    for stream, part in zip(_streams, (slice(0, half), slice(half, None))):
        stream.wait_stream(current)
        with torch.cuda.stream(stream):
            y[part] = _rows(x[part], weight, eps)
    for stream in _streams:
        current.wait_stream(stream)  # the join: the output is complete on the current stream
    return y
