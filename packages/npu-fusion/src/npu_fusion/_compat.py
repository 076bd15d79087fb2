"""Differences between the torch versions npu-fusion supports (2.11, 2.13-2.15). No patches."""

from __future__ import annotations


def size_hint(expr, fallback: int) -> int:
    """A concrete size for ``expr`` (a symbolic one's hint, else ``fallback``): torch 2.13's
    ``SizeVarAllocator.optimization_hint``, torch 2.11's ``size_hint``."""
    from torch._inductor.virtualized import V

    sizevars = V.graph.sizevars
    read = getattr(sizevars, "optimization_hint", None) or sizevars.size_hint
    try:
        return int(read(expr, fallback=fallback))
    except Exception:  # unbacked or otherwise unhinted
        return fallback


def left_default(module, name: str) -> bool:
    """Did the user leave config ``name`` of ``module`` (Inductor's) alone? torch 2.15's
    ``_is_default``. On 2.13 / 2.14 leaving a ``config.patch`` marks the restored value as set
    (``_is_default`` stays False for the rest of the process), so there a flag holding its
    default value counts as left alone (a user's explicit default is not told apart)."""
    from npu_inductor_core.torch_versions import at_least

    if module._is_default(name):
        return True
    return not at_least("2.15") and getattr(module, name) == module._config[name].default


def combo_kernels_marked() -> bool:
    """Whether npu's combo kernels carry their sub-kernels' indirect-load mark, so Ascend's
    config rules keep a gathering combo kernel above one row: torch 2.14+ builds combo kernels
    through ``TritonScheduling._build_combo_kernel``, which npu-lowering's scheduling extends;
    2.13 builds them inline."""
    from torch._inductor.codegen.triton import TritonScheduling

    return hasattr(TritonScheduling, "_build_combo_kernel")
