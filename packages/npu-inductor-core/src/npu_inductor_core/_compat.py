"""The core package's patches of upstream symbols: one installation each, dispatching to what
components register (``compile_hooks``)."""

from __future__ import annotations

import functools

from .patches import upstream_patch


@upstream_patch("torch._inductor.compile_fx.compile_fx", versions="torch 2.11, 2.13",
                removed_by="an upstream per-compile context hook (a device-aware compile_fx callback registry)")
def dispatch_compile_fx(entered, per_graph) -> bool:
    """``torch._inductor.compile_fx.compile_fx`` (what Dynamo's "inductor" backend looks up by
    name at each compile) runs inside the contexts components registered with
    ``compile_hooks.around_compile_fx``; with none registered for a compile it is upstream's
    call. Torch 2.11 and 2.13; removed by an upstream per-compile context hook (a device-aware
    ``compile_fx`` callback registry, as ``torch._inductor.config.pre_grad_custom_pass`` is for
    graphs). Per-graph contexts (``compile_hooks.around_compile_graph``) need no second patch:
    the wrapper passes upstream an ``inner_compile`` that enters them, which upstream calls for
    every graph, the lazily compiled backward included. ``entered(model, example_inputs)`` is
    ``compile_hooks.entered`` and ``per_graph(inner_compile)`` ``compile_hooks.per_graph``,
    passed in so that the two modules do not import each other."""
    import inspect
    from torch._inductor import compile_fx as module

    upstream = module.compile_fx
    if getattr(upstream, "_npu_core", False):
        return False

    default_inner = inspect.signature(upstream).parameters["inner_compile"].default

    @functools.wraps(upstream)
    def compile_fx(model_, example_inputs_, *args, **kwargs):
        if args:  # inner_compile passed by position
            args = (per_graph(args[0]), *args[1:])
        else:
            inner = kwargs.get("inner_compile", default_inner)
            if per_graph(inner) is not inner:  # some component has per-graph contexts
                kwargs["inner_compile"] = per_graph(inner)
        with entered(model_, example_inputs_):
            return upstream(model_, example_inputs_, *args, **kwargs)

    compile_fx._npu_core = True
    module.compile_fx = compile_fx
    return True
