"""`triton_heuristics` for generated npu kernels: upstream's decorators with the Ascend
tile generator's configs (npu_inductor_core.tiles) and the npu kernel object (autotuner.py).

Upstream computes its configs first (so the config flags it reads keep working); those are
then re-shaped for Ascend: num_warps=1, blocks within the UB, and our ordered tiling configs
first. Decorators without a configs-only mode are upstream's, with the kernel object adopted.
These are the defaults of npu-inductor-core's registry (``kernel_objects``); the module-level
names generated kernels call look the decorator up there, so a tuning component's replace
them without this module knowing it.
"""

from __future__ import annotations

from npu_inductor_core import kernel_objects
from torch._inductor.runtime import triton_heuristics as upstream
from torch._inductor.runtime.triton_heuristics import HeuristicType, cached_autotune

from npu_inductor_core import tiles as tiling
from .autotuner import NpuCachingAutotuner

DEVICE = "npu"


def _device(triton_meta: dict, inductor_meta: dict | None = None) -> tiling.Device:
    props = triton_meta.get("device")
    return tiling.device_for(inductor_meta, getattr(props, "index", 0) or 0)


def _merge(
    ours: list,
    theirs: list,
    triton_meta: dict,
    persistent_rblock: int | None = None,
    inductor_meta: dict | None = None,
) -> list:
    """Our configs first; upstream's after them when they fit the UB, as num_warps=1."""
    dev = _device(triton_meta, inductor_meta)
    out = list(ours)
    for c in theirs or ():
        if tiling.fits_ub(c.kwargs, triton_meta, dev, persistent_rblock):
            out.append(tiling.make_config(c.kwargs))
    return tiling.unique(out)


def _mix_order_configs(
    theirs: list, triton_meta: dict, persistent_rblock: int, inductor_meta: dict | None = None
) -> list:
    """Mix-order reductions (``RSPLIT_SIZE``): upstream's configs only (each carries the
    kernel's RSPLIT_SIZE and NUM_STAGES, which ours lack), as num_warps=1, XBLOCK (rows per
    step of a program's split) halved until the block fits the UB."""
    dev = _device(triton_meta, inductor_meta)
    out = []
    for c in theirs or ():
        kwargs = dict(c.kwargs)
        while kwargs.get("XBLOCK", 1) > 1 and not tiling.fits_ub(
            kwargs, triton_meta, dev, persistent_rblock
        ):
            kwargs["XBLOCK"] //= 2
        out.append(tiling.make_config(kwargs))
    return tiling.unique(out)


def _autotune(size_hints, configs, triton_meta, inductor_meta, heuristic_type, filename):
    configs = tiling.without_one_row_indirect(configs, size_hints, inductor_meta)
    configs = tiling.fit_to_ub(configs, size_hints, triton_meta, inductor_meta, filename)
    return cached_autotune(
        size_hints,
        configs,
        triton_meta=triton_meta,
        inductor_meta=inductor_meta,
        heuristic_type=heuristic_type,
        filename=filename,
        caching_autotuner_cls=NpuCachingAutotuner,
    )


def _pointwise(
    size_hints,
    triton_meta,
    tile_hint=None,
    filename=None,
    min_elem_per_thread=0,
    inductor_meta=None,
):
    inductor_meta = {} if inductor_meta is None else inductor_meta
    theirs = upstream.pointwise(
        size_hints,
        triton_meta,
        tile_hint=tile_hint,
        filename=filename,
        min_elem_per_thread=min_elem_per_thread,
        inductor_meta=inductor_meta,
        return_configs=True,
    )
    if not isinstance(theirs, list):
        return _adopting(theirs)  # a combo kernel with per-sub-kernel blocks: upstream built it
    configs = _merge(
        tiling.pointwise(size_hints, triton_meta, _device(triton_meta, inductor_meta)),
        theirs,
        triton_meta,
        inductor_meta=inductor_meta,
    )
    return _autotune(
        size_hints, configs, triton_meta, inductor_meta, HeuristicType.POINTWISE, filename
    )


def _reduction(
    size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None
):
    inductor_meta = {} if inductor_meta is None else inductor_meta
    theirs = upstream.reduction(
        size_hints,
        reduction_hint=reduction_hint,
        triton_meta=triton_meta,
        filename=filename,
        inductor_meta=inductor_meta,
        return_configs=True,
    )
    if not isinstance(theirs, list):
        return _adopting(theirs)  # a combo kernel with per-sub-kernel blocks: upstream built it
    ours = tiling.reduction(
        size_hints, triton_meta, _device(triton_meta, inductor_meta), persistent=False
    )
    return _autotune(
        size_hints,
        _merge(ours, theirs, triton_meta, inductor_meta=inductor_meta),
        triton_meta,
        inductor_meta,
        HeuristicType.REDUCTION,
        filename,
    )


def _persistent_reduction(
    size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None
):
    inductor_meta = {} if inductor_meta is None else inductor_meta
    theirs = upstream.persistent_reduction(
        size_hints,
        reduction_hint=reduction_hint,
        triton_meta=triton_meta,
        filename=filename,
        inductor_meta=inductor_meta,
        return_configs=True,
    )
    if not isinstance(theirs, list):
        return _adopting(theirs)  # a combo kernel with per-sub-kernel blocks: upstream built it
    rblock = tiling.reduction_numel(size_hints)
    if inductor_meta.get("RSPLIT_SIZE"):
        configs = _mix_order_configs(theirs, triton_meta, rblock, inductor_meta)
        return _autotune(
            size_hints,
            configs,
            triton_meta,
            inductor_meta,
            HeuristicType.PERSISTENT_REDUCTION,
            filename,
        )
    ours = tiling.reduction(
        size_hints, triton_meta, _device(triton_meta, inductor_meta), persistent=True
    )
    return _autotune(
        size_hints,
        _merge(ours, theirs, triton_meta, rblock, inductor_meta),
        triton_meta,
        inductor_meta,
        HeuristicType.PERSISTENT_REDUCTION,
        filename,
    )


def _adopting(decorate):
    """``decorate`` (an upstream decorator, built), whose kernel objects an npu kernel object
    takes over (``NpuCachingAutotuner.adopt``)."""

    def apply(fn):
        kernel = decorate(fn)
        return (
            NpuCachingAutotuner.adopt(kernel)
            if type(kernel) is upstream.CachingAutotuner
            else kernel
        )

    return apply


def _adopted(upstream_decorator):
    """Upstream decorators with no configs-only mode: build as upstream, then an npu kernel
    object takes over the state of the one upstream built."""

    def wrap(*args, **kwargs):
        return _adopting(upstream_decorator(*args, **kwargs))

    wrap.__name__ = upstream_decorator.__name__
    return wrap


# the lowering's decorators, by upstream's names; a tuning component (npu-autotune, entry
# point ``npu_inductor.heuristics: npu``) registers its own over some of them
DEFAULTS = {
    "pointwise": _pointwise,
    "reduction": _reduction,
    "persistent_reduction": _persistent_reduction,
    **{
        name: _adopted(getattr(upstream, name))
        for name in (
            "split_scan",
            "template",
            "user_autotune",
            "foreach",
            "fixed_config",
            "cooperative_reduction",
        )
    },
}
kernel_objects.register_kernel_class(DEVICE, NpuCachingAutotuner, DEFAULTS)


def _registered(name: str):
    """What generated kernels call (``triton_heuristics.pointwise(...)``): the decorator
    registered for npu under upstream's name, looked up when the kernel is defined."""

    def decorator(*args, **kwargs):
        return kernel_objects.heuristic(DEVICE, name)(*args, **kwargs)

    decorator.__name__ = decorator.__qualname__ = name
    return decorator


pointwise = _registered("pointwise")
reduction = _registered("reduction")
persistent_reduction = _registered("persistent_reduction")
split_scan = _registered("split_scan")
template = _registered("template")
user_autotune = _registered("user_autotune")
foreach = _registered("foreach")
fixed_config = _registered("fixed_config")
cooperative_reduction = _registered("cooperative_reduction")
