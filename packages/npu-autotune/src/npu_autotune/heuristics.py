"""The heuristics provider for npu kernels (entry point ``npu_inductor.heuristics: npu``).

npu-inductor-core's ``kernel_objects`` loads this module at its first lookup for device
"npu" and calls ``register()``: the decorators below replace the lowering's defaults (by
upstream's ``triton_heuristics`` names) and ``autotuner.KernelTuning`` becomes the ``tuning``
part of every npu kernel object (the lowering's class, registered there). Each decorator asks upstream's heuristic for its
configs first, so every flag upstream reads keeps working (autotune hints, tile hints,
determinism filters), then builds the npu candidates (``tiles``):
- ``triton.autotune_pointwise`` off (and no max-autotune): one config, no tuning (A53);
- default: our candidates, then upstream's that fit the UB, as one-warp configs;
- ``max_autotune`` / ``max_autotune_pointwise`` (A32, A42): the exhaustive candidate set
  (more program counts, reduction sub-blocks) and multibuffer variants where enabled;
- kernels whose configs upstream fixes (combo kernels, mix-order reductions with
  ``RSPLIT_SIZE``, no-x-dim kernels) keep upstream's configs, as npu kernel objects.
"""

from __future__ import annotations

from torch._inductor.runtime import triton_heuristics as upstream
from torch._inductor.runtime.hints import HeuristicType

from npu_inductor_core import kernel_objects

from . import combo
from . import config as npu_config
from npu_inductor_core import tiles
from .autotuner import KernelTuning

__all__ = ["register", "decorators"]
DEVICE = "npu"
DECORATORS = kernel_objects.HEURISTIC_NAMES


# upstream's decorators as imported (a benchmark may swap the module's names for ours)
_UPSTREAM = {name: getattr(upstream, name) for name in DECORATORS if hasattr(upstream, name)}


def _exhaustive(meta: dict) -> bool:
    return bool(meta.get("max_autotune") or meta.get("max_autotune_pointwise"))


def _multibuffer(meta: dict) -> bool:
    if npu_config.multibuffer is not None:
        return npu_config.multibuffer
    return kernel_objects.is_ascend(meta)


def _device(triton_meta: dict, meta: dict) -> tiles.Device:
    props = triton_meta.get("device")
    return tiles.device_for(meta, getattr(props, "index", 0) or 0)


def _registered_class():
    """The npu kernel-object class (npu-lowering's, registered in ``kernel_objects``)."""
    return kernel_objects.kernel_class(DEVICE)


def _adopted(decorate, kernel_class):
    """An upstream decorator whose kernel objects npu kernel objects take over (the kernel
    class's ``adopt``: a new object with the upstream one's state)."""

    def apply(fn):
        kernel = decorate(fn)
        return kernel_class().adopt(kernel) if type(kernel) is upstream.CachingAutotuner else kernel

    return apply


def _combo(decorate, kernel_class, triton_meta: dict, meta: dict):
    """A combo kernel upstream built: an npu kernel object whose per-sub-kernel tuning plan
    (if any) holds npu candidates (``combo.adapt``)."""
    adopted = _adopted(decorate, kernel_class)

    def apply(fn):
        kernel = adopted(fn)
        combo.adapt(
            kernel,
            _device(triton_meta, meta),
            exhaustive=_exhaustive(meta),
            multibuffer=_multibuffer(meta),
        )
        return kernel

    return apply


def _merge(
    ours: list, theirs: list, triton_meta: dict, dev: tiles.Device, rnumel: int | None = None
) -> list:
    out = list(ours)
    for c in theirs or ():
        npu = tiles.as_npu(c)
        if tiles.fits_ub(npu, triton_meta, dev, rnumel):
            out.append(npu)
    return tiles.unique(out)


def _upstream_fixed(meta: dict) -> bool:
    return bool(meta.get("RSPLIT_SIZE") or meta.get("no_x_dim"))


def _mix_order_in_ub(
    configs: list, triton_meta: dict, dev: tiles.Device, rnumel: int | None
) -> list:
    """Mix-order reductions (``RSPLIT_SIZE``, A55): upstream's configs with XBLOCK (rows per
    step of a program's split) halved until the block fits the UB; RSPLIT_SIZE is untouched
    (upstream tunes it in codegen)."""
    out = []
    for c in configs:
        while c.kwargs.get("XBLOCK", 1) > 1 and not tiles.fits_ub(c, triton_meta, dev, rnumel):
            c.kwargs["XBLOCK"] //= 2
        out.append(c)
    return tiles.unique(out)


def register() -> None:
    """Entry-point hook (``npu_inductor.heuristics: npu``): this package's decorators and
    tuning part for npu kernel objects."""
    kernel_objects.register_heuristics(DEVICE, "npu-autotune", decorators())
    kernel_objects.register_tuning(DEVICE, "npu-autotune", KernelTuning())


def decorators(kernel_class=_registered_class) -> dict:
    """The ``triton_heuristics`` decorators generated npu kernels use; ``kernel_class()`` is
    the class they build (a benchmark passes its own, with ``adopt``)."""

    def autotune(size_hints, configs, triton_meta, inductor_meta, heuristic_type, filename):
        npu_config.validate_inductor_meta(inductor_meta)
        configs = tiles.without_one_row_indirect(configs, size_hints, inductor_meta)
        configs = tiles.fit_to_ub(configs, size_hints, triton_meta, inductor_meta, filename)
        return upstream.cached_autotune(
            size_hints,
            configs,
            triton_meta=triton_meta,
            inductor_meta=inductor_meta,
            heuristic_type=heuristic_type,
            filename=filename,
            caching_autotuner_cls=kernel_class(),
        )

    def pointwise(
        size_hints,
        triton_meta,
        tile_hint=None,
        filename=None,
        min_elem_per_thread=0,
        inductor_meta=None,
    ):
        meta = {} if inductor_meta is None else inductor_meta
        theirs = _UPSTREAM["pointwise"](
            size_hints,
            triton_meta,
            tile_hint=tile_hint,
            filename=filename,
            min_elem_per_thread=min_elem_per_thread,
            inductor_meta=meta,
            return_configs=True,
        )
        if not isinstance(theirs, list):  # combo kernel: upstream built it
            return _combo(theirs, kernel_class, triton_meta, meta)
        dev = _device(triton_meta, meta)
        if _upstream_fixed(meta):
            return autotune(
                size_hints,
                [tiles.as_npu(c) for c in theirs],
                triton_meta,
                meta,
                HeuristicType.POINTWISE,
                filename,
            )
        ours = tiles.pointwise(
            size_hints,
            triton_meta,
            dev,
            exhaustive=_exhaustive(meta),
            multibuffer=_multibuffer(meta),
        )
        if not meta.get("autotune_pointwise", True) and not _exhaustive(meta):
            configs = ours[:1]
        else:
            configs = _merge(ours, theirs, triton_meta, dev)
        return autotune(size_hints, configs, triton_meta, meta, HeuristicType.POINTWISE, filename)

    def _reduction(kind, size_hints, reduction_hint, triton_meta, filename, inductor_meta):
        meta = {} if inductor_meta is None else inductor_meta
        persistent = kind == HeuristicType.PERSISTENT_REDUCTION
        up = _UPSTREAM["persistent_reduction" if persistent else "reduction"]
        theirs = up(
            size_hints,
            reduction_hint=reduction_hint,
            triton_meta=triton_meta,
            filename=filename,
            inductor_meta=meta,
            return_configs=True,
        )
        if not isinstance(theirs, list):  # combo kernel: upstream built it
            return _combo(theirs, kernel_class, triton_meta, meta)
        dev = _device(triton_meta, meta)
        rn = tiles.persistent_rnumel(size_hints, {}) if persistent else None
        if _upstream_fixed(meta):
            configs = [tiles.as_npu(c) for c in theirs]
            if meta.get("RSPLIT_SIZE"):
                configs = _mix_order_in_ub(configs, triton_meta, dev, rn)
            return autotune(size_hints, configs, triton_meta, meta, kind, filename)
        ours = tiles.reduction(
            size_hints,
            triton_meta,
            dev,
            persistent=persistent,
            exhaustive=_exhaustive(meta),
            multibuffer=_multibuffer(meta),
        )
        return autotune(
            size_hints,
            _merge(ours, theirs, triton_meta, dev, rn),
            triton_meta,
            meta,
            kind,
            filename,
        )

    def reduction(
        size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None
    ):
        return _reduction(
            HeuristicType.REDUCTION,
            size_hints,
            reduction_hint,
            triton_meta,
            filename,
            inductor_meta,
        )

    def persistent_reduction(
        size_hints, reduction_hint=False, triton_meta=None, filename=None, inductor_meta=None
    ):
        return _reduction(
            HeuristicType.PERSISTENT_REDUCTION,
            size_hints,
            reduction_hint,
            triton_meta,
            filename,
            inductor_meta,
        )

    def adopting(name):
        up = _UPSTREAM[name]

        def wrap(*args, **kwargs):
            return _adopted(up(*args, **kwargs), kernel_class)

        wrap.__name__ = name
        return wrap

    out = {
        "pointwise": pointwise,
        "reduction": reduction,
        "persistent_reduction": persistent_reduction,
    }
    for name in DECORATORS:
        if name not in out and name in _UPSTREAM:
            out[name] = adopting(name)
    return out
