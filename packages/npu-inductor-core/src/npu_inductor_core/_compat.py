"""The core package's patches of upstream symbols: one installation each, dispatching to what
components register (``compile_hooks``)."""

from __future__ import annotations

import functools

from .patches import upstream_patch


@upstream_patch(
    "torch._inductor.compile_fx.compile_fx",
    versions="torch 2.13, 2.14, 2.15",
    removed_by="an upstream per-compile context hook (a device-aware compile_fx callback registry)",
)
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


# modules that bound has_triton by name at import and whose answer npu graphs need:
# Scheduler.create_backend (refuses a GPU-like device without Triton) and
# autotune_cache.inductor_meta_from_config (no backend_hash, so the bundled autotune cache
# asserts); the others keep upstream's function
_HAS_TRITON_USERS = (
    "torch.utils._triton",
    "torch._inductor.scheduler",
    "torch._inductor.runtime.autotune_cache",
)


@upstream_patch(
    "torch.utils._triton.has_triton",
    torch=("2.13",),
    versions="torch 2.13 (2.14+: upstream asks every registered device interface, no patch)",
    removed_by="torch 2.14's has_triton(), which asks every registered DeviceInterface "
    "(is_available and is_triton_capable): not installed there",
    reason="torch.utils._triton.has_triton() only asks cuda, xpu, cpu and mtia; it also answers True "
    "where the npu device interface is available and triton-capable, except while a graph "
    "without npu devices is lowered.",
)
def has_triton_knows_npu() -> bool:
    """``torch.utils._triton.has_triton()`` only asks cuda, xpu, cpu and mtia. Three things
    need it True on a machine whose Triton device is npu (npu-sim, or torch_npu without a
    GPU): Dynamo puts user @triton.jit kernels into the graph (npu-launcher launches them),
    ``Scheduler.create_backend`` accepts the npu device (npu-lowering), and
    ``autotune_cache.inductor_meta_from_config`` gives npu compiles a ``backend_hash`` for the
    bundled autotune cache (npu-cache). One function answers upstream's value, or True where
    the npu device interface is available and triton-capable, except while a graph without
    npu devices is being lowered (there: upstream's answer, so cpu/cuda graphs see no change).
    It replaces the name in ``torch.utils._triton`` and where Inductor bound it by name at
    import (``_HAS_TRITON_USERS``; one function under its aliases, as npu-cache's
    ``create_cache``). ``functools.cache``'s ``cache_clear`` is kept. Torch 2.13 only:
    torch 2.14's has_triton() asks every registered DeviceInterface (is_available,
    is_triton_capable, raise_if_triton_unavailable), npu's included, so nothing is patched
    there (upstream's answer is then True for a graph without npu devices too, as it is for
    any registered triton-capable device)."""
    import importlib

    import torch.utils._triton as triton_utils

    from .torch_versions import at_least

    if at_least("2.14"):  # torch 2.14, 2.15: has_triton() asks npu's registered interface itself
        return False
    upstream = triton_utils.has_triton
    if getattr(upstream, "_npu_core", False):
        return False

    def has_triton() -> bool:
        return upstream() or (_npu_triton_capable() and not _graph_without_npu())

    has_triton._npu_core = True
    has_triton.__wrapped__ = upstream
    has_triton.cache_clear = upstream.cache_clear
    for name in _HAS_TRITON_USERS:
        module = importlib.import_module(name)
        if getattr(module, "has_triton", None) is upstream:
            module.has_triton = has_triton
    return True


def _npu_triton_capable() -> bool:
    try:
        from torch._dynamo.device_interface import get_interface_for_device

        interface = get_interface_for_device("npu")
        return bool(interface.is_available() and interface.is_triton_capable())
    except Exception:  # no npu device interface registered, or no Triton
        return False


def _graph_without_npu() -> bool:
    from torch._inductor.virtualized import V

    try:
        return "npu" not in V.graph.device_types
    except (AttributeError, AssertionError):  # no graph being lowered (Dynamo tracing, cache hit)
        return False
