"""The estimated NPU time of one call of a function on npu tensors, by the cost model
(``cost_model``): what npu-autotune's benchmarker answers on npu-sim, and what the demo and
bench/estimate.py report for eager and compiled models.

Inside ``estimate_call``, each npu kernel a compiled graph launches is priced and not run
(npu-lowering's kernel object and npu-autotune's launcher ask ``cost_model.priced_launch``),
and each ATen op on npu tensors (an eager op, or a compiled graph's extern kernel: ATen's
GEMM, a fallback) runs, since later code may read its output, and is priced as one aclnn op:
its launch, its tensors' bytes, and its multiply-accumulates from torch's FLOP counter
formulas. The figure depends on the kernels and shapes only, not on this machine or its load.
"""

from __future__ import annotations

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import cost_model
from .device import device

aten = torch.ops.aten

# ops that allocate, alias or re-describe memory: no kernel runs on the device (views are
# told by their schema; _unsafe_view and the in-place metadata ops are not marked as views)
_NO_KERNEL = {
    aten._unsafe_view,
    aten.as_strided_,
    aten.squeeze_,
    aten.unsqueeze_,
    aten.transpose_,
    aten.t_,
    aten.detach_,
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


class PriceAtenOps(TorchDispatchMode):
    """Runs each ATen op and prices those that launch work on an npu tensor into the
    current ``cost_model.estimating()`` estimate (none open: nothing is added)."""

    @classmethod
    def ignore_compile_internals(cls) -> bool:
        # a compiled function then runs its compiled code under this mode (its extern kernels
        # priced here, its Triton kernels by priced_launch); False makes Dynamo skip the frame
        # and run the model eagerly, which would price eager's ops as the compiled ones
        return True

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        out = func(*args, **kwargs)
        if func._overloadpacket in _NO_KERNEL or func.is_view:
            return out
        inputs, outputs = _npu_tensors((args, kwargs)), _npu_tensors(out)
        if inputs or outputs:
            moved = sum(t.numel() * t.element_size() for t in (*inputs, *outputs))
            dev = (inputs or outputs)[0].device.index or 0
            macs = _macs(func, args, kwargs, out)
            # float32 operands run at the Cube's float32 rate
            fp32 = bool(macs) and bool(inputs) and inputs[0].dtype == torch.float32
            cost_model.add_aten_op(moved, macs, device(dev), fp32=fp32)
        return out


def estimate_call(fn) -> cost_model.Estimate:
    """The estimate of one call of ``fn()``: its seconds, the kernels and aclnn ops priced,
    and the kernels that had no work record (``unpriced``, each counted as a bare launch).
    A compiled function must have compiled already: its kernels are not run here, so a first
    call's outputs (and anything computed from them) would be wrong."""
    with cost_model.estimating() as est, PriceAtenOps():
        fn()
    return est
