"""What npu-autotune reads of an npu kernel object, in one place (the object is
npu-lowering's ``NpuCachingAutotuner``; its public ``simulated`` and ``sim_config()`` and
upstream's ``CachingAutotuner`` state are all this package uses)."""

from __future__ import annotations

from npu_inductor_core import decorators, tiles


def simulated(kernel) -> bool:
    """The kernel runs on npu-sim (decided where it was generated)."""
    return bool(kernel.simulated)


def device_of(kernel) -> tiles.Device:
    return decorators.device_of(kernel.triton_meta, kernel.inductor_meta)


def kernel_name(kernel) -> str:
    return kernel.inductor_meta.get("kernel_name") or getattr(kernel.fn, "__name__", "npu kernel")
