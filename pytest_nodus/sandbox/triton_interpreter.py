"""Make the Triton interpreter (the CPU path) run what the GPU runs, with the GPU's numbers.

Two upstream gaps are closed here, in the sandbox only, before the submission is imported:

1. bf16 arithmetic (below).
2. ``@triton.autotune``: the autotuner benchmarks configs through the active GPU driver, and
   there is none ("0 active drivers"), so an autotuned kernel cannot run at all. On the CPU
   every config is given the same time without being run (timings there are not policed),
   so the first config is taken.

bf16 arithmetic:

The interpreter (``TRITON_INTERPRET=1``) stores bfloat16 as raw uint16 bit patterns and
hands them to numpy as they are, so ``a + b``, ``tl.dot(a, b)``, comparisons and min/max
on bf16 operate on the integers, not the numbers (triton-lang/triton#11584, PR #10945;
shared/GPU.md). Its float32 -> bfloat16 cast truncates where the GPU rounds to nearest
even, which doubles a bf16 kernel's error against an fp32 reference.

The fix wraps the interpreter builder's generic value ops: bf16 operands are widened to
float32 (exact), the op runs in float32, and a result that should be bf16 is rounded back
to nearest even, as the GPU does. Loads, stores and bitcasts keep the raw bits. Applied in
the sandbox before the submission is imported, only on the CPU path.
"""

from __future__ import annotations

import functools

import numpy as np


def bf16_bits_to_f32(bits: np.ndarray) -> np.ndarray:
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round float32 to bfloat16, nearest even, NaN kept quiet: as the GPU's cvt.rn.bf16."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    is_nan = (bits & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000)
    rounding = np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))
    rounded = ((bits + rounding) >> np.uint32(16)).astype(np.uint16)
    return np.where(is_nan, np.uint16(0x7FC0), rounded).astype(np.uint16)


def install() -> bool:
    """Patch the interpreter in this process. Returns False if its layout is unknown."""
    _install_autotuner_fix()
    return _install_bf16_fix()


def _install_autotuner_fix() -> None:
    try:
        from triton.runtime.autotuner import Autotuner
    except ImportError:
        return

    def do_bench(self):
        return self._do_bench or (lambda kernel_call, quantiles: [0.0] * len(quantiles))

    Autotuner.do_bench = property(do_bench)


def _install_bf16_fix() -> bool:
    try:
        import triton.language as tl
        from triton.runtime import interpreter as interp
    except ImportError:
        return False
    builder = getattr(interp, "InterpreterBuilder", None)
    handle_cls = getattr(interp, "TensorHandle", None)
    if builder is None or handle_cls is None or getattr(builder, "_nodus_bf16", False):
        return builder is not None and handle_cls is not None

    def is_bf16(handle) -> bool:
        return isinstance(handle, handle_cls) and getattr(handle.dtype, "scalar", handle.dtype) == tl.bfloat16

    def widen(handle):
        return handle_cls(bf16_bits_to_f32(handle.data), tl.float32) if is_bf16(handle) else handle

    def narrow(result):
        if isinstance(result, handle_cls) and result.dtype == tl.float32:
            return handle_cls(f32_to_bf16_bits(result.data), tl.bfloat16)
        return result

    def value_op(method, result_follows_operands: bool):
        @functools.wraps(method)
        def wrapper(self, *args):
            if not any(is_bf16(a) for a in args):
                return method(self, *args)
            result = method(self, *(widen(a) for a in args))
            # Arithmetic on bf16 gives bf16; comparisons give bool and are left alone.
            if result_follows_operands and isinstance(result, handle_cls) and result.data.dtype == np.float32:
                return narrow(result)
            return result

        return wrapper

    for name in ("binary_op", "unary_op", "create_fma", "create_rsqrt", "create_erf"):
        if hasattr(builder, name):
            setattr(builder, name, value_op(getattr(builder, name), True))

    original_ternary = builder.ternary_op

    @functools.wraps(original_ternary)
    def ternary_op(self, lhs, rhs, other, op):
        # select/clamp: the result takes `other`'s dtype; widen only when values are compared.
        if op is np.where or not any(is_bf16(a) for a in (lhs, rhs, other)):
            return original_ternary(self, lhs, rhs, other, op)
        return narrow(original_ternary(self, widen(lhs), widen(rhs), widen(other), op))

    builder.ternary_op = ternary_op

    original_dot = builder.create_dot

    @functools.wraps(original_dot)
    def create_dot(self, a, b, d, *rest):
        # The accumulator keeps its dtype (fp32 for bf16 operands, as on the GPU).
        return original_dot(self, widen(a), widen(b), d, *rest)

    builder.create_dot = create_dot

    original_cast = builder.cast_impl

    @functools.wraps(original_cast)
    def cast_impl(self, src, dst_type):
        dst = getattr(dst_type, "scalar", dst_type)
        if dst == tl.bfloat16 and not is_bf16(src) and src.dtype.is_floating():
            return handle_cls(f32_to_bf16_bits(src.data.astype(np.float32)), tl.bfloat16)
        if is_bf16(src) and dst != tl.bfloat16:
            if dst.is_floating() or dst.is_int():
                return original_cast(self, widen(src), dst_type)
        return original_cast(self, src, dst_type)

    builder.cast_impl = cast_impl
    for name in ("create_fp_ext", "create_fp_trunc", "create_fp_to_si", "create_fp_to_ui"):
        setattr(builder, name, lambda self, src, dst_type: self.cast_impl(src, dst_type))

    reduce_ops = getattr(interp, "ReduceOps", None)
    if reduce_ops is not None:
        original_min_max = reduce_ops.min_max

        def min_max(self, input, val_reduce_op, idx_reduce_op=None):
            tensor = input[0] if isinstance(input, tuple) else input
            if tensor.dtype == tl.bfloat16:
                values = bf16_bits_to_f32(tensor.handle.data)
                result = []
                if val_reduce_op:
                    v = np.asarray(val_reduce_op(values, axis=self.axis, keepdims=self.keep_dims))
                    result.append(self.to_tensor(f32_to_bf16_bits(v), tensor.dtype))
                if idx_reduce_op:
                    result.append(self.to_tensor(idx_reduce_op(values, axis=self.axis, keepdims=self.keep_dims), tl.int32))
                return result[0] if len(result) == 1 else tuple(result)
            return original_min_max(self, input, val_reduce_op, idx_reduce_op)

        reduce_ops.min_max = min_max

        original_sum = reduce_ops.sum

        def reduce_sum(self, input):
            if input.dtype == tl.bfloat16:
                total = np.sum(bf16_bits_to_f32(input.handle.data), axis=self.axis, keepdims=self.keep_dims)
                return self.to_tensor(f32_to_bf16_bits(np.asarray(total, dtype=np.float32)), input.dtype)
            return original_sum(self, input)

        reduce_ops.sum = reduce_sum

    builder._nodus_bf16 = True
    return True
