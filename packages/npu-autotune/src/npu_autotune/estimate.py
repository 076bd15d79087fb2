"""Benchmarks on npu-sim by the Ascend cost model (``npu_inductor_core.cost_model``), not by
timing Triton's interpreter.

A benchmarked callable runs once inside ``cost_model.estimating()``: each npu kernel it
launches is priced from the work its codegen recorded and the programs of its grid, and not
run (npu-lowering's kernel object and this package's ``SimLauncher`` ask
``cost_model.priced_launch``); each ATen op on npu tensors (an extern kernel: ATen's GEMM, a
fallback op) runs, since later code may read its output, and is priced as one aclnn op: its
launch, its tensors' bytes, and its multiply-accumulates from torch's FLOP counter formulas.
The result depends on the kernels and shapes only, so every decision upstream takes by timing
(autotuning, benchmark fusion, max-autotune's choices, coordinate descent) comes out the same
on any machine and load.
"""

from __future__ import annotations

import torch
from npu_inductor_core import cost_model
from npu_inductor_core.device import device
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

aten = torch.ops.aten

# ops that allocate, alias or re-describe memory: no kernel runs on the device
_NO_KERNEL = {
    aten.empty,
    aten.empty_strided,
    aten.empty_like,
    aten.new_empty,
    aten.new_empty_strided,
    aten.resize_,
    aten.set_,
    aten.detach,
    aten.alias,
    aten.lift_fresh,
    aten.as_strided,
    aten.record_stream,
}


def _npu_tensors(tree) -> list[torch.Tensor]:
    leaves, _ = tree_flatten(tree)
    return [t for t in leaves if isinstance(t, torch.Tensor) and t.device.type == "npu"]


def _macs(func, args, kwargs, out) -> float:
    from torch.utils.flop_counter import flop_registry

    formula = flop_registry.get(func._overloadpacket)
    if formula is None:
        return 0.0
    try:
        return formula(*args, **kwargs, out_val=out) / 2
    except Exception:  # a formula that does not take this overload's arguments: no Cube work
        return 0.0


class _PriceAtenOps(TorchDispatchMode):
    """Runs each ATen op and prices those that launch work on an npu tensor."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func._overloadpacket in _NO_KERNEL or func.is_view:
            return out
        inputs, outputs = _npu_tensors((args, kwargs)), _npu_tensors(out)
        if inputs or outputs:
            moved = sum(t.numel() * t.element_size() for t in (*inputs, *outputs))
            dev = (inputs or outputs)[0].device.index or 0
            cost_model.add_aten_op(moved, _macs(func, args, kwargs, out), device(dev))
        return out


def estimated_ms(fn) -> float:
    """The estimated NPU time of one call of ``fn``, in milliseconds (the benchmarker's unit)."""
    with cost_model.estimating() as est, _PriceAtenOps():
        fn()
    return est.seconds * 1e3
