"""Dtypes an accelerator's kernel takes and the CPU kernel that npu-sim falls back to does not.

npu-sim is a device: an op that torch_npu (or CUDA) runs in some dtype must run on npu-sim in
that dtype too, although its boxed fallback runs the CPU kernel, which may refuse it (torch.histc
on int32: "histogram_cpu" not implemented for 'Int'; Hugging Face's mixture-of-experts routing
calls it on every non-CPU device). For the ops below the fallback converts: tensor arguments of
a listed dtype go to the CPU kernel in the compute dtype, and results come back in the argument's
dtype (in-place and out= arguments are written back), which is the dtype the op's meta kernel
gives a non-CPU device (what fake tensors and torch.compile expect).

This table is the one place that says so: npu-sim's C++ fallback reads it when the device starts
(`_C._set_dtype_conversions`), its README's table and `tests/test_fallback_dtypes.py` are made
from it. Each row names its evidence: torch_npu 2.14.0's wheel (its op registration yaml
`torch_npu/csrc/aten/npu_native_functions_by_codegen.yaml`, and the dtype checks its op-plugin
sources compile into `libtorch_npu.so`), and CUDA's dtypes in torch's OpInfo database.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

LOW_FLOAT = (torch.float16, torch.bfloat16)
INTEGER = (torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64)

# What a dtype is computed in when the CPU kernel lacks it, and why that dtype.
COMPUTE = {
    torch.float16: torch.float32,  # the accumulation type cuda's kernels use; rounded once back
    torch.bfloat16: torch.float32,
    # integers through float64: exact for every int32 (and int64 below 2**53), as bin edges need
    torch.uint8: torch.float64,
    torch.int8: torch.float64,
    torch.int16: torch.float64,
    torch.int32: torch.float64,
    torch.int64: torch.float64,
}


@dataclass(frozen=True)
class Row:
    op: str  # aten op name: every overload (functional, out=, in-place) converts
    dtypes: tuple  # dtypes the accelerators take and the CPU kernel refuses
    evidence: str
    compute: dict | None = None  # per dtype, where it differs from COMPUTE

    def conversions(self) -> dict:
        return {d: (self.compute or {}).get(d, COMPUTE.get(d)) for d in self.dtypes}


_NPU_YAML = "torch_npu 2.14 registers it (npu_native_functions_by_codegen.yaml)"

TABLE = (
    Row(
        "histc",
        INTEGER,
        f"{_NPU_YAML}: aclnnHistc; its aclop path checks 'histc input only supported Int32, Float16, "
        "Float32'; cuda: every integer type. Hugging Face MoE routing calls it on int32 expert ids",
    ),
    Row(
        "abs",
        (torch.bool,),
        f"{_NPU_YAML} (abs, abs.out); cuda: bool (the identity)",
        compute={torch.bool: torch.uint8},
    ),
    Row(
        "trace",
        (torch.bool,),
        f"{_NPU_YAML}; cuda: bool (the count of true diagonal entries, int64)",
        compute={torch.bool: torch.uint8},
    ),
    Row("avg_pool3d", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row("avg_pool3d_backward", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row("_upsample_bilinear2d_aa", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row("_upsample_bilinear2d_aa_backward", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row("_upsample_bicubic2d_aa", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row("_upsample_bicubic2d_aa_backward", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row("multilabel_margin_loss_forward", LOW_FLOAT, f"{_NPU_YAML}; cuda: float16, bfloat16"),
    Row(
        "multilabel_margin_loss_backward",
        LOW_FLOAT,
        "cuda: float16, bfloat16 (torch_npu 2.14: forward only)",
    ),
    Row("multi_margin_loss", LOW_FLOAT, "cuda: float16, bfloat16 (not in torch_npu 2.14)"),
    Row("multi_margin_loss_backward", LOW_FLOAT, "cuda: float16, bfloat16 (not in torch_npu 2.14)"),
    Row(
        "rrelu_with_noise",
        (torch.float16,),
        f"{_NPU_YAML}; cuda: float16 (the cpu kernel takes bfloat16)",
    ),
    # CUDA takes these from torch 2.15 (its OpInfo dtypes); the CPU kernels refuse them on every
    # supported torch, and the meta kernels' result dtypes are the same on each, so one row serves
    Row(
        "_fft_r2c",
        (torch.bfloat16,),
        "cuda (torch 2.15+): bfloat16 torch.stft, computed in float32 (a complex64 result, as the meta kernel "
        "gives)",
    ),
    Row(
        "sparse_sampled_addmm",
        LOW_FLOAT,
        "cuda (torch 2.15+): float16 (cuSPARSE SDDMM), bfloat16 (computed in float32); the CSR self converts too",
    ),
    # Not here: float16 ffts (cuda takes them for power-of-two sizes). torch.fft's composite
    # refuses float16 on every device but cuda and meta ("Unsupported dtype Half", before any
    # kernel), so neither npu-sim's fallback nor torch_npu's _fft_r2c ever sees one.
)


def by_op() -> dict:
    """{"aten::op": {dtype: compute dtype}}, what the fallback reads."""
    return {f"aten::{r.op}": r.conversions() for r in TABLE}


def install(module) -> None:
    """Hands the table to the C++ fallback (npu_sim._C), once, when the device starts."""
    module._set_dtype_conversions([(name, list(conv.items())) for name, conv in by_op().items()])


def markdown() -> str:
    """The README's table."""
    lines = [
        "| op (every overload) | accelerator dtypes the CPU kernel lacks | computed in | evidence |",
        "|---|---|---|---|",
    ]
    for r in TABLE:
        conv = r.conversions()
        dts = ", ".join(str(d).removeprefix("torch.") for d in r.dtypes)
        comp = ", ".join(sorted({str(c).removeprefix("torch.") for c in conv.values()}))
        lines.append(f"| `{r.op}` | {dts} | {comp} | {r.evidence} |")
    return "\n".join(lines)
