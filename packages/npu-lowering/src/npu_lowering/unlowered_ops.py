"""ATen ops torch 2.13's Inductor has no lowering (and no fallback) for, kept as the device's
ATen op on npu whatever ``implicit_fallbacks`` says.

With ``implicit_fallbacks=False`` (how upstream's OpInfo test and Ascend's adapted suites run
Inductor) an op missing from Inductor's lowering table fails the compile
(``MissingOperatorWithoutDecomp``): ``grid_sampler_3d`` (``F.grid_sample`` on 5-d input),
``hash_tensor`` and ``nonzero_static`` did on npu, while each runs as an ATen kernel on the
devices upstream targets (torch 2.14 adds ``make_fallback(aten.nonzero_static)`` for all of them;
grid_sampler_3d and hash_tensor are cuda kernels Inductor calls through its implicit fallback).

Upstream asks its lowering table before any per-node hook (``node.meta["should_fallback"]``
is read only for ops that have a lowering), and that table is shared by every device: an
entry for these ops would change cpu/cuda compiles. So npu's post-grad pass retargets the npu
nodes of these ops (and only while upstream has no lowering for them) to an op of our own
namespace ``npu_fallback`` with the same schema, whose kernel is the ATen op for every device
(fake tensors: the ATen op's meta kernel) and whose lowering is upstream's ``make_fallback``:
the generated code calls the ATen kernel through it, as a FallbackKernel, and its
neighbours still fuse. Other devices' graphs never contain it.
"""

from __future__ import annotations

import functools

import torch

aten = torch.ops.aten
UNLOWERED = (aten.grid_sampler_3d.default, aten.hash_tensor.default, aten.nonzero_static.default)
NAMESPACE = "npu_fallback"

_lib = None


def _on_npu(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else (val,)
    return any(isinstance(v, torch.Tensor) and v.device.type == "npu" for v in vals)


@functools.cache
def stand_in(op: torch._ops.OpOverload) -> torch._ops.OpOverload:
    """Our op with `op`'s schema, computing `op`, lowered as a fallback (defined once)."""
    global _lib
    from torch._inductor.lowering import make_fallback

    if _lib is None:
        _lib = torch.library.Library(NAMESPACE, "FRAGMENT")  # noqa: TOR901  (kept for the process)
    name = op._schema.name.split("::", 1)[1]
    _lib.define(str(op._schema).split("::", 1)[1])
    _lib.impl(name, lambda *args, **kwargs: op(*args, **kwargs), "CompositeExplicitAutograd")
    ours = getattr(getattr(torch.ops, NAMESPACE), name).default
    make_fallback(ours, warn=False)
    return ours


def define() -> None:
    """Every stand-in, when npu-lowering registers: a cached compile (FX graph cache) calls
    them without running the pass that made them."""
    from torch._inductor.lowering import lowerings

    for op in UNLOWERED:
        if op not in lowerings:
            stand_in(op)


def apply(gm: torch.fx.GraphModule) -> int:
    """Retarget the npu nodes of unlowered ops; returns how many."""
    from torch._inductor.lowering import lowerings

    changed = 0
    for node in gm.graph.nodes:
        if (
            node.op == "call_function"
            and node.target in UNLOWERED
            and node.target not in lowerings
            and _on_npu(node)
        ):
            node.target = stand_in(node.target)
            changed += 1
    if changed:
        gm.recompile()
    return changed
