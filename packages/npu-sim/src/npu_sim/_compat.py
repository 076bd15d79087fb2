"""Patches of upstream symbols, one function per patch, each naming the versions it is for
and the upstream hook that would remove it."""

from __future__ import annotations

import threading

_interpreting = threading.local()


def interpret_nested_jit_calls() -> None:
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
        return
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


def check_interpreted_memory_accesses() -> None:
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
        return
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
