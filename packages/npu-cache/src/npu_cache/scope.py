"""Which device the compile on this thread is for.

Upstream's ``create_cache`` sees only a cache id and class names, never the graph; the
compile scope (entered around ``compile_fx`` and around each graph it compiles, through
npu-inductor-core's ``compile_hooks``) records
whether the graph being compiled has npu devices, so cache selection can be npu-only.
A ContextVar, so nested compiles and other threads see their own answer.
"""

from __future__ import annotations

import contextlib
import contextvars

from npu_inductor_core.compile_hooks import graph_on_npu

_npu: contextvars.ContextVar[bool] = contextvars.ContextVar("npu_cache_npu_compile", default=False)


def in_npu_compile() -> bool:
    """True while an Inductor compile of a graph with npu devices runs on this context."""
    return _npu.get()


@contextlib.contextmanager
def compile_scope(on_npu: bool):
    token = _npu.set(bool(on_npu))
    try:
        yield
    finally:
        _npu.reset(token)


def compile_context(model, example_inputs):
    """Around ``compile_fx`` (registered with npu-inductor-core's ``compile_hooks``): the whole
    compile runs inside the compile scope, so AOTAutograd's cache lookup and save, which happen
    before ``_compile_fx_inner``, know the compile is for npu."""
    import torch

    on_npu = any(
        isinstance(t, torch.Tensor) and t.device.type == "npu" for t in example_inputs or ()
    )
    return compile_scope(
        on_npu or (isinstance(model, torch.fx.GraphModule) and graph_on_npu(model))
    )


def graph_context(gm, example_inputs):
    """Around each graph ``compile_fx`` compiles (``compile_hooks.around_compile_graph``): a
    backward graph is compiled lazily, at the first backward call, outside ``compile_fx`` and
    its scope; ``create_cache`` is called for it (FX graph cache lookup and save, autotune
    caches as kernels load, the bundled autotune cache at codegen) with no device in view."""
    return compile_scope(graph_on_npu(gm))
