"""Patches of upstream symbols, one function per patch, each naming the versions it is for
and the upstream hook that would remove it."""

from __future__ import annotations

import threading

from npu_inductor_core.patches import upstream_patch

_interpreting = threading.local()


@upstream_patch("triton.runtime.jit.JITFunction.__call__", versions="Triton 3.6-3.8",
                removed_by="the interpreter handling nested JITFunctions itself")
def interpret_nested_jit_calls() -> bool:
    """Inside a kernel run by Triton's interpreter, a call to another @triton.jit function
    (Inductor's triton_helpers, our libdevice) reaches JITFunction.__call__, which raises
    unless TRITON_INTERPRET=1 was set before those functions were decorated; setting it
    process-wide would also interpret cuda kernels. We make JITFunction.__call__ run the
    function interpreted while this thread is inside an npu-sim launch, and raise as
    upstream everywhere else. Triton 3.6-3.8; removed if the interpreter handled nested
    JITFunctions itself."""
    from triton.runtime.interpreter import InterpretedFunction, _patch_lang
    from triton.runtime.jit import JITFunction

    upstream = JITFunction.__call__
    if getattr(upstream, "_npu_sim", False):
        return False
    cache: dict = {}

    def __call__(self, *args, **kwargs):
        if not getattr(_interpreting, "active", False):
            return upstream(self, *args, **kwargs)
        fn = cache.get(self.fn)
        if fn is None:
            fn = cache[self.fn] = InterpretedFunction(self.fn)
        # InterpretedFunction.__call__ patches triton.language for the callee and never
        # restores it (harmless when the whole process interprets); we restore, so a later
        # real compile (cuda) in this process sees the original builtins
        scope = _patch_lang(self.fn)
        try:
            return fn.rewrite()(*args, **kwargs)
        finally:
            scope.restore()

    __call__._npu_sim = True
    JITFunction.__call__ = __call__
    return True


@upstream_patch(*(f"triton.runtime.interpreter.InterpreterBuilder.{name}" for name in (
                    "create_masked_load", "create_masked_store", "create_atomic_rmw", "create_atomic_cas")),
                versions="Triton 3.6-3.8", removed_by="the interpreter checking its accesses itself")
def check_interpreted_memory_accesses() -> bool:
    """Triton's interpreter loads and stores through raw host addresses (in C++), so a kernel
    that reads or writes outside its tensors kills the process with SIGSEGV, or silently
    corrupts memory, where an NPU would raise an exception. While this thread runs an npu-sim
    launch we check that every address a load, store or atomic touches (mask applied) lies in
    npu memory, and raise an error naming the kernel otherwise; everywhere else upstream runs
    unchanged. Triton 3.6-3.8 (InterpreterBuilder.create_masked_load/_store,
    create_atomic_rmw/_cas); removed if the interpreter checked its accesses itself."""
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    if getattr(builder.create_masked_load, "_npu_sim", False):
        return False
    from ._runtime import ext

    def check(ptrs, mask, what):
        if not getattr(_interpreting, "active", False):
            return
        addrs = np.ascontiguousarray(ptrs.data, dtype=np.uint64)
        lanes = None
        if mask is not None:
            lanes = np.ascontiguousarray(np.broadcast_to(mask.data, addrs.shape), dtype=np.bool_)
        itemsize = interpreter._get_np_dtype(ptrs.get_element_ty()).itemsize
        bad = ext()._first_outside_npu_memory(addrs.ctypes.data, 0 if lanes is None else lanes.ctypes.data,
                                              addrs.size, itemsize)
        if bad >= 0:
            raise RuntimeError(
                f"npu-sim: kernel {_kernel_name()} {what} address {int(addrs.reshape(-1)[bad]):#x} (lane {bad} of "
                f"{addrs.size}, program {tuple(interpreter.interpreter_builder.grid_idx)}), outside npu memory: an "
                "out-of-bounds access, which a device reports as an exception (the interpreter would crash)")

    upstream_load, upstream_store = builder.create_masked_load, builder.create_masked_store
    upstream_rmw, upstream_cas = builder.create_atomic_rmw, builder.create_atomic_cas

    def create_masked_load(self, ptrs, mask, *args):
        check(ptrs, mask, "loads from")
        return upstream_load(self, ptrs, mask, *args)

    def create_masked_store(self, ptrs, value, mask, *args):
        check(ptrs, mask, "stores to")
        return upstream_store(self, ptrs, value, mask, *args)

    def create_atomic_rmw(self, rmw_op, ptr, val, mask, *args):
        check(ptr, mask, "updates (atomic)")
        return upstream_rmw(self, rmw_op, ptr, val, mask, *args)

    def create_atomic_cas(self, ptr, cmp, val, *args):
        check(ptr, None, "updates (atomic cas)")
        return upstream_cas(self, ptr, cmp, val, *args)

    for fn in (create_masked_load, create_masked_store, create_atomic_rmw, create_atomic_cas):
        fn._npu_sim = True
        setattr(builder, fn.__name__, fn)
    return True


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


class interpreting:
    """Marks this thread as running an interpreted npu kernel (its memory accesses checked)."""

    def __enter__(self):
        check_interpreted_memory_accesses()
        self.prev = getattr(_interpreting, "active", False)
        _interpreting.active = True

    def __exit__(self, *exc):
        _interpreting.active = self.prev
        return False


def _bf16_to_f32(bits):
    import numpy as np

    return (bits.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(values):
    """Round to nearest even, as Ascend's (and CUDA's) float32 -> bfloat16 conversion."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32)
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    quiet_nan = ((bits >> 16) | 0x40).astype(np.uint16)
    return np.where(np.isnan(values.astype(np.float32)), quiet_nan, rounded)


@upstream_patch("triton.runtime.interpreter.InterpreterBuilder.cast_impl", versions="Triton 3.6-3.8",
                removed_by="the interpreter converting bfloat16 by value",
                reason="Triton's interpreter casts bfloat16 on its uint16 bit patterns (float32 truncated, "
                       "other types garbage); we convert by value, rounding to nearest even.")
def interpret_bf16_casts() -> bool:
    """Triton's interpreter stores bfloat16 as uint16 bit patterns. Its casts convert
    float32 -> bfloat16 by truncation (Ascend and CUDA round to nearest even: results one ulp
    off eager's) and any other type to or from bfloat16 with numpy's astype on those bits
    (int16 / float16 -> bfloat16 gave garbage). We convert through float32 with round to
    nearest even. Triton 3.6-3.8 (InterpreterBuilder.cast_impl); removed when the interpreter
    converts bfloat16 by value."""
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle, _get_np_dtype

    upstream = InterpreterBuilder.cast_impl
    if getattr(upstream, "_npu_sim", False):
        return False

    def cast_impl(self, src, dst_type):
        src_ty, dst_ty = src.dtype.scalar, dst_type.scalar
        if (src_ty == tl.bfloat16) == (dst_ty == tl.bfloat16):
            return upstream(self, src, dst_type)
        data = _bf16_to_f32(src.data) if src_ty == tl.bfloat16 else src.data.astype(np.float32)
        if dst_ty == tl.bfloat16:
            return TensorHandle(_f32_to_bf16(data), dst_ty)
        return TensorHandle(data.astype(_get_np_dtype(dst_type)), dst_ty)

    cast_impl._npu_sim = True
    InterpreterBuilder.cast_impl = cast_impl
    return True


@upstream_patch("triton.runtime.interpreter.InterpreterBuilder.create_atomic_rmw", versions="Triton 3.6-3.8",
                removed_by="the interpreter's atomics taking strided values and bfloat16",
                reason="Triton's interpreter's atomic read-modify-write adds garbage for a broadcast (stride-0) value and refuses bfloat16; we pass contiguous copies and apply bf16 updates element by element.")
def interpret_atomics() -> bool:
    """Two gaps of Triton's interpreter's atomic read-modify-write (C++ over the numpy
    buffers):
    - it reads the value operand's buffer as contiguous, but a value broadcast to the pointers'
      shape (``tl.atomic_add(ptrs, tl.full([1], 2.0, ...))``: Inductor's scatter of a scalar
      with reduce="add") is a numpy view with stride 0, so it added garbage; we pass
      contiguous copies;
    - it takes numpy dtypes only and raises "Unsupported data type" for bfloat16 (a uint16
      pattern there), so every bf16 scatter_add / index_put(accumulate) failed on npu-sim
      (triton-ascend lowers bf16 atomic_add/max/min). The interpreter runs one program at a
      time, so we apply a bf16 update element by element in order (each step rounded to
      bfloat16, as an atomic does) and return each element's old value.
    Triton 3.6-3.8 (InterpreterBuilder.create_atomic_rmw); removed when the interpreter's
    atomics take strided values and bfloat16."""
    import numpy as np
    import triton.language as tl
    from triton._C.libtriton import interpreter as _interpreter
    from triton._C.libtriton import ir as _ir
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    upstream = InterpreterBuilder.create_atomic_rmw
    if getattr(upstream, "_npu_sim", False):
        return False
    combine = {
        _ir.ATOMIC_OP.FADD: lambda old, val: old + val,
        _ir.ATOMIC_OP.MAX: np.fmax,
        _ir.ATOMIC_OP.MIN: np.fmin,
        _ir.ATOMIC_OP.XCHG: lambda old, val: val,
    }

    def create_atomic_rmw(self, rmwOp, ptr, val, mask, sem, scope):
        if val.dtype.scalar != tl.bfloat16 or rmwOp not in combine:
            ptr, val, mask = (TensorHandle(np.ascontiguousarray(a.data), a.dtype.scalar) for a in (ptr, val, mask))
            return upstream(self, rmwOp, ptr, val, mask, sem, scope)
        ptrs, vals, masks = (np.ascontiguousarray(a.data).reshape(-1) for a in (ptr, val, mask))
        olds = np.zeros(vals.shape, np.uint16)
        one, bits = np.ones(1, bool), np.dtype(np.uint16)
        for i in np.flatnonzero(masks):
            p = ptrs[i:i + 1]
            old = _interpreter.load(p, one, np.zeros(1, np.uint16), bits)
            new = combine[rmwOp](_bf16_to_f32(old), _bf16_to_f32(vals[i:i + 1]))
            _interpreter.store(p, _f32_to_bf16(new), one)
            olds[i] = old[0]
        return TensorHandle(olds.reshape(np.shape(val.data)), tl.bfloat16)

    create_atomic_rmw._npu_sim = True
    InterpreterBuilder.create_atomic_rmw = create_atomic_rmw
    return True


@upstream_patch("triton.runtime.interpreter.InterpreterBuilder.create_dot", versions="Triton 3.6-3.8",
                removed_by="the interpreter's dot reading bfloat16")
def interpret_bf16_dot() -> bool:
    """Triton's interpreter multiplies tl.dot operands as stored; bfloat16 is stored as uint16
    bit patterns, so a bf16 GEMM (every bf16 matmul template) multiplied the integers. We
    widen bfloat16 operands to float32 by value first. Triton 3.6-3.8
    (InterpreterBuilder.create_dot); removed when the interpreter's dot reads bfloat16."""
    import triton.language as tl
    from triton.runtime.interpreter import InterpreterBuilder, TensorHandle

    upstream = InterpreterBuilder.create_dot
    if getattr(upstream, "_npu_sim", False):
        return False

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        def widened(x):
            return TensorHandle(_bf16_to_f32(x.data), tl.float32) if x.dtype.scalar == tl.bfloat16 else x

        return upstream(self, widened(a), widened(b), d, input_precision, max_num_imprecise_acc)

    create_dot._npu_sim = True
    InterpreterBuilder.create_dot = create_dot
    return True
