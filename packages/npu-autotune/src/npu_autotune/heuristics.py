"""The heuristics provider for npu kernels (entry point ``npu_inductor.heuristics: npu``).

npu-inductor-core's ``kernel_objects`` loads this module at its first lookup for device
"npu" and calls ``register()``: npu-inductor-core's decorators built with this package's
policy replace the lowering's defaults (by upstream's ``triton_heuristics`` names), and
``autotuner.KernelTuning`` becomes the ``tuning`` part of every npu kernel object (the
lowering's class, registered there). The policy: multibuffer variants among the candidates on
Ascend (``config.multibuffer`` overrides), npu candidates in the tuning plans of combo kernels
upstream builds (``combo.adapt``), and this package's check of the tuning settings upstream
passes in ``inductor_meta``.
"""

from __future__ import annotations

from npu_inductor_core import decorators as npu_decorators
from npu_inductor_core import kernel_objects

from . import combo
from . import config as npu_config
from .autotuner import KernelTuning

__all__ = ["register", "decorators"]
DEVICE = "npu"


def _multibuffer(meta: dict) -> bool:
    if npu_config.multibuffer is not None:
        return npu_config.multibuffer
    return kernel_objects.is_ascend(meta)


def _registered_class():
    """The npu kernel-object class (npu-lowering's, registered in ``kernel_objects``)."""
    return kernel_objects.kernel_class(DEVICE)


def register() -> None:
    """Entry-point hook (``npu_inductor.heuristics: npu``): this package's decorators and
    tuning part for npu kernel objects."""
    kernel_objects.register_heuristics(DEVICE, "npu-autotune", decorators())
    kernel_objects.register_tuning(DEVICE, "npu-autotune", KernelTuning())


def decorators(kernel_class=_registered_class) -> dict:
    """The ``triton_heuristics`` decorators generated npu kernels use; ``kernel_class()`` is
    the class they build (a benchmark passes its own, with ``adopt``)."""
    return npu_decorators.decorators(
        npu_decorators.Policy(
            kernel_class=kernel_class,
            multibuffer=_multibuffer,
            adapt_combo=combo.adapt,
            check_meta=npu_config.validate_inductor_meta,
        )
    )
