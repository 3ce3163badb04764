"""What the harness reports about a call's outputs: where they lie, and what they are.

The grader reads the outputs itself (from the arena on the GPU, out of this process's
memory on the CPU) and verifies them there; this module only says where to read, and
names outputs that are not what the contract asks for (a tensor subclass or proxy can run
work when something touches it: a lazy output).
"""

from __future__ import annotations

import torch

_Tensor = torch.Tensor  # captured before any submission code runs


def _byte_span(t: torch.Tensor) -> tuple[int, int]:
    """The bytes from a tensor's lowest element to the end of its highest: two halves of one
    allocation (FlashAttention's packed ``dkv`` split into dK and dV) are apart, while an
    input or any view of one lies over the input's bytes."""
    if t.numel() == 0:
        return t.data_ptr(), t.data_ptr()
    low = sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if st < 0)
    high = sum((n - 1) * st for n, st in zip(t.shape, t.stride()) if st > 0)
    return t.data_ptr() + low * t.element_size(), t.data_ptr() + (high + 1) * t.element_size()


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1] and a[1] > a[0] and b[1] > b[0]


def places(result, expected, receipts, device: torch.device, arena: torch.Tensor, heap) -> list:
    """Where the grader reads each output. GPU: its byte offset in the arena, where the
    call wrote it when that is in the heap. CPU: ``[address, bytes]`` in this process.
    Anything else of the contract's shape and device (outside the heap, not contiguous)
    is copied into its receipt first (GPU: the receipt's offset, the copy timed with the
    call; CPU: None). What is not a plain tensor of the contract's shape gets -1 (GPU:
    the grader reads poison) or None (CPU: the receipt holds poison)."""
    cuda = device.type == "cuda"
    base = arena.data_ptr()
    outs = result if type(result) in (tuple, list) else (result,)
    found = []
    for i, (shape, dtype) in enumerate(expected):
        out = outs[i] if i < len(outs) else None
        if type(out) is not _Tensor or tuple(out.shape) != shape or out.dtype != dtype or out.is_cuda != cuda:
            found.append(-1 if cuda else None)
        elif out.is_contiguous() and not cuda:
            found.append([out.data_ptr(), out.numel() * out.element_size()])
        elif out.is_contiguous() and heap.holds(out) and out.data_ptr() % 16 == 0:
            found.append(out.data_ptr() - base)
        else:
            receipts[i].copy_(out)
            found.append(receipts[i].data_ptr() - base if cuda else None)
    return found


def normalise(result, expected, device: torch.device, input_spans):
    """(outputs, flags): exact torch.Tensor outputs of the contract's shape, dtype and
    device that lie over no byte of an input or of each other; else (None, flags)."""
    if len(expected) == 1 and type(result) is not tuple and type(result) is not list:
        result = (result,)
    if type(result) not in (tuple, list) or len(result) != len(expected):
        return None, [{"code": "wrong_output",
                       "detail": f"expected {len(expected)} output tensor(s), got {type(result).__name__}"}]
    flags = []
    for i, out in enumerate(result):
        if type(out) is not _Tensor:
            code = "tensor_subclass" if isinstance(out, _Tensor) else "wrong_output"
            flags.append({"code": code, "detail": f"output {i} is {type(out).__module__}.{type(out).__qualname__}, not torch.Tensor"})
            continue
        shape, dtype = expected[i]
        if tuple(out.shape) != shape:
            flags.append({"code": "wrong_shape", "detail": f"output {i} has shape {tuple(out.shape)}, expected {shape}"})
        if out.dtype != dtype:
            flags.append({"code": "wrong_dtype", "detail": f"output {i} is {out.dtype}, expected {dtype}"})
        if out.device.type != device.type:
            flags.append({"code": "wrong_device", "detail": f"output {i} is on {out.device}"})
    if flags:
        return None, flags
    # An output over an input's bytes is that input or a view of it; outputs over each
    # other's bytes are one result returned twice.
    spans_out = [_byte_span(t) for t in result]
    for i, span in enumerate(spans_out):
        if any(_overlaps(span, s) for s in input_spans):
            flags.append({"code": "output_aliases_input", "detail": f"output {i} lies over an input's bytes"})
        if any(_overlaps(span, s) for s in spans_out[:i]):
            flags.append({"code": "output_aliases_input", "detail": f"output {i} lies over another output's bytes"})
    return (None, flags) if flags else (list(result), [])
