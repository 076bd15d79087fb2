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


class interpreting:
    """Marks this thread as running an interpreted npu kernel."""

    def __enter__(self):
        self.prev = getattr(_interpreting, "active", False)
        _interpreting.active = True

    def __exit__(self, *exc):
        _interpreting.active = self.prev
        return False
