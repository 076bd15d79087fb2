"""Combo kernels for npu graphs (``config.combo_kernels``): upstream's combo kernels (several
independent kernels in one launch), turned on per npu graph where the user left Inductor's
``combo_kernels`` at its default, for the groups ``combo_gate`` admits.

Why: Q's and K's RMSNorm + RoPE (Qwen3-style QK norm) are reductions over 32 and 8 heads;
upstream's scheduler fuses only nodes of one iteration size (pytorch#171572), so they stay two
launches; a combo kernel runs both in one, each sub-kernel in programs of its own. Upstream's
peak-memory gate for combo kernels (5% of the graph's estimated peak) refuses that pair (+25%
estimated) and would ignore a grouping algorithm; it is off for these graphs where the user
left it at its default (``_compat.left_default``: torch 2.13 / 2.14 need a second look):
``combo_gate`` admits only reductions that read a common buffer.

Registered per graph with npu-inductor-core's ``compile_hooks.around_compile_graph``: a cpu or
cuda graph gets None (upstream's config and grouping untouched).
"""

from __future__ import annotations

import contextlib

from npu_inductor_core.compile_hooks import graph_on_npu

from . import _compat, combo_gate, config

# Upstream's memory gate for combo kernels (both None: the grouping algorithm decides).
_MEMORY_GATES = ("combo_kernel_peak_memory_pct_threshold", "combo_kernel_peak_memory_increase_gb")


def graph_context(gm, example_inputs):
    """Inductor's combo kernels with npu's grouping for an npu graph; None otherwise."""
    from torch._inductor import config as inductor

    if not config.combo_kernels or not _compat.left_default(inductor, "combo_kernels"):
        return None
    gates = [g for g in _MEMORY_GATES if hasattr(inductor, g)]  # an older torch may lack one
    if not all(_compat.left_default(inductor, g) for g in gates):
        return None  # the user chose a memory gate: leave combo kernels off, as they are
    if not graph_on_npu(gm, example_inputs) or not _may_combine(gm):
        return None
    return _combo_kernels(gates)


@contextlib.contextmanager
def _combo_kernels(gates: list[str]):
    from torch._inductor import config as inductor

    with inductor.patch({"combo_kernels": True, **dict.fromkeys(gates)}), combo_gate.narrowed():
        yield


def _may_combine(gm) -> bool:
    """Two reductions at least, and no user Triton kernel. Upstream's combo pass re-sorts the
    whole schedule even where it forms no combo, and that sort fails on a user kernel with a
    fused epilogue (npu-autotune's epilogue-fusion test: "Topological sort failed!"); so it
    runs only where ``combo_gate`` can admit something."""
    import torch

    reductions = 0
    nodes = gm.graph.nodes if isinstance(gm, torch.fx.GraphModule) else ()
    for node in nodes:
        target = node.target
        if "triton_kernel_wrapper" in getattr(target, "__name__", ""):
            return False
        reductions += torch.Tag.reduction in getattr(target, "tags", ())
    return reductions >= 2
