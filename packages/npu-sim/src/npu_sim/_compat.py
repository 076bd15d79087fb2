"""Patches of upstream symbols, one function per patch, each naming the versions it is for
and the upstream hook that would remove it."""

from __future__ import annotations

from npu_inductor_core.patches import upstream_patch


@upstream_patch("triton.runtime.jit.JITFunction.__call__", versions="Triton 3.8, 3.9",
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

    from .interp_builder import interpreting as _interpreting

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


@upstream_patch("triton.runtime.interpreter.interpreter_builder", versions="Triton 3.8, 3.9",
                removed_by="the interpreter checking its memory accesses and handling bfloat16 by value itself "
                           "(or taking a builder from its caller)",
                reason="Triton's interpreter runs every op through one module-level builder instance "
                       "(interpreter_builder, also held by interpreter_semantic); we make that instance an "
                       "interp_builder.NpuInterpreterBuilder: out-of-bounds loads/stores/atomics raise during an "
                       "npu-sim launch instead of SIGSEGV, and bfloat16 casts, dot and atomics work by value.")
def interpret_npu_kernels() -> bool:
    """Triton's interpreter has no way to pass it a builder: GridExecutor and _patch_lang read
    the module global ``interpreter_builder``, and ``interpreter_semantic`` holds the same
    instance. We change that one instance's class to our subclass (its state, e.g. grid index
    and options, kept), which overrides create_masked_load/_store, create_atomic_rmw/_cas (an
    address outside npu memory raises, only while this thread runs an npu-sim launch),
    cast_impl, create_dot and create_atomic_rmw (bfloat16 by value, strided atomic values); one
    symbol instead of seven class attributes. Triton 3.6-3.8; removed when the interpreter does
    these itself or takes a builder from its caller."""
    from triton.runtime import interpreter

    from .interp_builder import NpuInterpreterBuilder

    if isinstance(interpreter.interpreter_builder, NpuInterpreterBuilder):
        return False
    interpreter.interpreter_builder.__class__ = NpuInterpreterBuilder
    return True


class interpreting:
    """Marks this thread as running an interpreted npu kernel (its memory accesses checked)."""

    def __enter__(self):
        from .interp_builder import interpreting as flag

        interpret_npu_kernels()
        self.flag = flag
        self.prev = getattr(flag, "active", False)
        flag.active = True

    def __exit__(self, *exc):
        self.flag.active = self.prev
        return False
