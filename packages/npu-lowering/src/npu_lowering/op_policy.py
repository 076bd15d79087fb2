"""Ops npu graphs keep as the device's ATen op, whatever their dtype, because Ascend's
compiler cannot compile the Triton kernel Inductor would generate for them.

- ``aten.sort`` (and what lowers through it): Inductor's sort kernel
  (``triton_helpers.sort_with_index``, a bitonic network of reshapes) makes 910B's
  bishengir-compile abort (exit -6) for every config, and bishengir-compile-a5 (950) time
  out or plan 2-5x the UB our model allows (ascendnpu-ir 1.2.0, checked 2026-12-04); on
  Ascend the ATen op is aclnn's sort.

Marked with upstream's per-node hook (``node.meta["should_fallback"]``, as ``dtype_policy``
does), so the op lowers as a FallbackKernel and its neighbours still fuse.
"""

from __future__ import annotations

import torch

aten = torch.ops.aten
ATEN_ONLY = {aten.sort.default: "sort", aten.sort.stable: "sort"}


def _on_npu(node: torch.fx.Node) -> bool:
    val = node.meta.get("val")
    vals = val if isinstance(val, (list, tuple)) else (val,)
    return any(isinstance(v, torch.Tensor) and v.device.type == "npu" for v in vals)


def apply(gm: torch.fx.GraphModule) -> int:
    """Mark the npu nodes of ``gm`` that stay ATen ops; returns how many."""
    marked = 0
    for node in gm.graph.nodes:
        if node.op == "call_function" and node.target in ATEN_ONLY and _on_npu(node):
            node.meta["should_fallback"] = True
            marked += 1
    return marked
