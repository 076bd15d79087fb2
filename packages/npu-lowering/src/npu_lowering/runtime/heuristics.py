"""`triton_heuristics` for generated npu kernels: the names generated kernels call
(``triton_heuristics.pointwise(...)``), each looking its decorator up in npu-inductor-core's
registry (``kernel_objects``) when the kernel is defined, so a tuning component's decorators
replace the defaults without this module knowing it.

The defaults registered here are npu-inductor-core's decorators (``decorators.py``: upstream's
configs first, then the tile generator's, the UB fit) with this package's policy: the npu
kernel object (autotuner.py), no multibuffer variants, combo kernels as upstream builds them.
"""

from __future__ import annotations

from npu_inductor_core import decorators, kernel_objects

from .autotuner import NpuCachingAutotuner

DEVICE = "npu"

# the lowering's decorators, by upstream's names; a tuning component (npu-autotune, entry
# point ``npu_inductor.heuristics: npu``) registers its own over some of them
DEFAULTS = decorators.decorators(decorators.Policy(kernel_class=lambda: NpuCachingAutotuner))
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
