"""Patches of upstream symbols, one function per patch, each naming the versions it is for
and the upstream hook that would remove it."""

from __future__ import annotations

from npu_inductor_core.patches import upstream_patch


@upstream_patch(
    "triton.runtime.jit.JITFunction.__call__",
    versions="Triton 3.8, 3.9",
    removed_by="the interpreter handling nested JITFunctions itself",
)
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
        entry = cache.get(self.fn)
        if entry is None:
            entry = cache[self.fn] = (InterpretedFunction(self.fn), language_modules(self.fn))
        fn, langs = entry
        patched = getattr(_interpreting, "patched_langs", frozenset())
        if langs <= patched:
            # the launch (or a caller) already patched the language modules this function
            # sees: patching them again per call cost ~2.5 ms each, most of a kernel's time
            # when it calls a helper inside a loop
            return fn.rewrite()(*args, **kwargs)
        # InterpretedFunction.__call__ patches triton.language for the callee and never
        # restores it (harmless when the whole process interprets); we restore, so a later
        # real compile (cuda) in this process sees the original builtins
        restore = patch_languages(langs - patched, _patch_lang)
        _interpreting.patched_langs = patched | langs
        try:
            return fn.rewrite()(*args, **kwargs)
        finally:
            _interpreting.patched_langs = patched
            restore()

    __call__._npu_sim = True
    JITFunction.__call__ = __call__
    return True


@upstream_patch(
    "triton.runtime.interpreter.interpreter_builder",
    versions="Triton 3.8, 3.9",
    removed_by="the interpreter checking its memory accesses and handling bfloat16 by value itself "
    "(or taking a builder from its caller)",
    reason="Triton's interpreter runs every op through one module-level builder instance "
    "(interpreter_builder, also held by interpreter_semantic); we make that instance an "
    "interp_builder.NpuInterpreterBuilder: out-of-bounds loads/stores/atomics raise during an "
    "npu-sim launch instead of SIGSEGV, and bfloat16 casts, dot and atomics work by value.",
)
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


_LANGUAGE_PATCHES: dict = {}
_MISSING = object()


def patch_languages(langs: frozenset, patch_lang):
    """Patch the language modules ``langs`` as the interpreter's ``_patch_lang`` does for a
    function that sees them; returns the function that restores them. ``_patch_lang`` looks
    every builtin up again (~2-4 ms a call, paid by every helper call inside a kernel's
    loops); the attributes it sets are the same each time, so they are recorded once per set
    of modules and replayed with setattr."""
    from types import SimpleNamespace

    patches = _LANGUAGE_PATCHES.get(langs)
    if patches is None:
        scope = patch_lang(
            SimpleNamespace(__globals__={f"lang{i}": m for i, m in enumerate(langs)})
        )
        changes = getattr(scope, "_changes", None)
        if changes is None:  # an interpreter whose scope keeps no list: patch per call
            return scope.restore
        patches = [(obj, name, getattr(obj, name)) for obj, name, _ in changes]
        scope.restore()
        _LANGUAGE_PATCHES[langs] = patches
    saved = []
    for obj, name, value in patches:
        saved.append((obj, name, getattr(obj, name, _MISSING)))
        setattr(obj, name, value)

    def restore():
        for obj, name, original in reversed(saved):
            if original is _MISSING:
                delattr(obj, name)
            else:
                setattr(obj, name, original)

    return restore


_LANGUAGE_MODULES: dict = {}


def language_modules(fn) -> frozenset:
    """The triton.language modules ``fn`` sees, which the interpreter patches for it (once per
    function: every launch asks)."""
    langs = _LANGUAGE_MODULES.get(fn)
    if langs is None:
        import inspect

        import triton.language as tl

        langs = _LANGUAGE_MODULES[fn] = frozenset(
            v for v in fn.__globals__.values() if inspect.ismodule(v) and v in (tl, tl.core)
        )
    return langs


class interpreting:
    """Marks this thread as running an interpreted npu kernel (its memory accesses checked);
    ``kernel_fn``: the kernel's Python function, whose language modules the interpreter's
    launch patches for the whole run (nested helper calls need not patch them again)."""

    def __init__(self, kernel_fn=None):
        self.langs = language_modules(kernel_fn) if kernel_fn is not None else frozenset()

    def __enter__(self):
        from .interp_builder import interpreting as flag

        interpret_npu_kernels()
        self.flag = flag
        self.prev = getattr(flag, "active", False), getattr(flag, "patched_langs", frozenset())
        flag.active = True
        flag.patched_langs = self.langs

    def __exit__(self, *exc):
        self.flag.active, self.flag.patched_langs = self.prev
        return False
