"""NpuInterpreterBuilder: Triton's interpreter builder with the fixes npu kernels need.

Triton's interpreter runs every op through one module-level builder instance
(``triton.runtime.interpreter.interpreter_builder``, also held by ``interpreter_semantic``);
``_compat.interpret_npu_kernels`` makes that instance one of this subclass, once. Imported only
from there (it imports Triton)."""

from __future__ import annotations

import threading

import numpy as np
import triton.language as tl
from triton._C.libtriton import interpreter as _interpreter
from triton._C.libtriton import ir as _ir
from triton.runtime import interpreter
from triton.runtime.interpreter import InterpreterBuilder, TensorHandle, _get_np_dtype

interpreting = (
    threading.local()
)  # .active: this thread runs an npu-sim launch; .patched_langs: see _compat

_COMBINE = {
    _ir.ATOMIC_OP.FADD: lambda old, val: old + val,
    _ir.ATOMIC_OP.MAX: np.fmax,
    _ir.ATOMIC_OP.MIN: np.fmin,
    _ir.ATOMIC_OP.XCHG: lambda old, val: val,
}


def bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(values):
    """Round to nearest even, as Ascend's (and CUDA's) float32 -> bfloat16 conversion."""
    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    quiet_nan = ((bits >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(values.astype(np.float32)), quiet_nan, rounded)


def _kernel_name() -> str:
    """The interpreted kernel on this thread's stack (only read on the error path)."""
    import sys

    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if type(owner).__name__ == "GridExecutor" and hasattr(owner, "fn"):
            return getattr(owner.fn, "__name__", "?")
        frame = frame.f_back
    return "?"


def _check(ptrs, mask, what):
    """Triton's interpreter loads and stores through raw host addresses (in C++): an access
    outside the kernel's tensors kills the process (SIGSEGV) or corrupts memory where an NPU
    raises. While this thread runs an npu-sim launch, every address touched (mask applied) must
    lie in npu memory; otherwise an error naming the kernel."""
    if not getattr(interpreting, "active", False):
        return
    from ._runtime import ext

    addrs = np.ascontiguousarray(ptrs.data, dtype=np.uint64)
    lanes = None
    if mask is not None:
        lanes = np.ascontiguousarray(np.broadcast_to(mask.data, addrs.shape), dtype=np.bool_)
    itemsize = _get_np_dtype(ptrs.get_element_ty()).itemsize
    bad = ext()._first_outside_npu_memory(
        addrs.ctypes.data, 0 if lanes is None else lanes.ctypes.data, addrs.size, itemsize
    )
    if bad >= 0:
        raise RuntimeError(
            f"npu-sim: kernel {_kernel_name()} {what} address {int(addrs.reshape(-1)[bad]):#x} (lane {bad} of "
            f"{addrs.size}, program {tuple(interpreter.interpreter_builder.grid_idx)}), outside npu memory: an "
            "out-of-bounds access, which a device reports as an exception (the interpreter would crash)"
        )


def _bool_mask(mask):
    """A mask as booleans: Triton 3.9's interpreter (torch 2.15) refuses a non-bool mask array in
    its C++ load/store ("mask has unsupported dtype"), which an int32 mask of a GEMM template's
    store reaches it as; 3.8 took any dtype. Nonzero lanes are the active ones, as on a device."""
    if mask is None or mask.data.dtype == np.bool_:
        return mask
    return TensorHandle(mask.data.astype(np.bool_), tl.int1)


class NpuInterpreterBuilder(InterpreterBuilder):
    """Memory-access checks (npu launches only) and bfloat16 by value (casts, dot, atomics)."""

    def create_masked_load(self, ptrs, mask, *args):
        mask = _bool_mask(mask)
        _check(ptrs, mask, "loads from")
        return super().create_masked_load(ptrs, mask, *args)

    def create_masked_store(self, ptrs, value, mask, *args):
        mask = _bool_mask(mask)
        _check(ptrs, mask, "stores to")
        return super().create_masked_store(ptrs, value, mask, *args)

    def create_atomic_cas(self, ptr, cmp, val, *args):
        _check(ptr, None, "updates (atomic cas)")
        return super().create_atomic_cas(ptr, cmp, val, *args)

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        """Upstream reads the value operand's buffer as contiguous (a broadcast, stride-0 value
        added garbage: Inductor's scatter of a scalar with reduce="add"), and refuses bfloat16
        ("Unsupported data type"; triton-ascend lowers bf16 atomic_add/max/min). We pass
        contiguous copies, and apply a bf16 update element by element in order (the
        interpreter runs one program at a time), each step rounded to bfloat16."""
        _check(ptr, mask, "updates (atomic)")
        if val.dtype.scalar != tl.bfloat16 or rmwOp not in _COMBINE:
            ptr, val, mask = (
                TensorHandle(np.ascontiguousarray(a.data), a.dtype.scalar) for a in (ptr, val, mask)
            )
            return super().create_atomic_rmw(rmwOp, ptr, val, mask, sem, scope)
        ptrs, vals, masks = (np.ascontiguousarray(a.data).reshape(-1) for a in (ptr, val, mask))
        olds = np.zeros(vals.shape, np.uint16)
        one, bits = np.ones(1, bool), np.dtype(np.uint16)
        for i in np.flatnonzero(masks):
            p = ptrs[i : i + 1]
            old = _interpreter.load(p, one, np.zeros(1, np.uint16), bits)
            new = _COMBINE[rmwOp](bf16_to_f32(old), bf16_to_f32(vals[i : i + 1]))
            _interpreter.store(p, f32_to_bf16(new), one)
            olds[i] = old[0]
        return TensorHandle(olds.reshape(np.shape(val.data)), tl.bfloat16)

    def cast_impl(self, src, dst_type):
        """Upstream casts bfloat16 on its uint16 bit patterns: float32 -> bfloat16 truncates
        (Ascend and CUDA round to nearest even), other types go through numpy's astype on the
        bits (garbage). We convert through float32 with round to nearest even."""
        src_ty, dst_ty = src.dtype.scalar, dst_type.scalar
        if (src_ty == tl.bfloat16) == (dst_ty == tl.bfloat16):
            return super().cast_impl(src, dst_type)
        data = bf16_to_f32(src.data) if src_ty == tl.bfloat16 else src.data.astype(np.float32)
        if dst_ty == tl.bfloat16:
            return TensorHandle(f32_to_bf16(data), dst_ty)
        return TensorHandle(data.astype(_get_np_dtype(dst_type)), dst_ty)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        """Upstream multiplies the operands as stored; bfloat16 is stored as uint16 bit
        patterns, so a bf16 GEMM multiplied the integers. We widen bf16 operands by value."""

        def widened(x):
            return (
                TensorHandle(bf16_to_f32(x.data), tl.float32)
                if x.dtype.scalar == tl.bfloat16
                else x
            )

        return super().create_dot(widened(a), widened(b), d, input_precision, max_num_imprecise_acc)
