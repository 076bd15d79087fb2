"""ATen for an npu GEMM that no template takes, whatever ``max_autotune_gemm_backends`` says.

Upstream's GEMM lowerings (``tuned_mm``/``tuned_addmm``/``tuned_bmm``) choose ATen regardless
of the backends where their Triton templates cannot apply (a zero-size GEMM, or outside
max-autotune); on cuda the templates take every other GEMM, so the TRITON backend alone always
has a choice. On npu they do not: npu-autotune's template heuristics offer no candidate for a
matrix-vector product (M=1 or N=1, whose ``rn % N`` indexing folds to the zero-stride pointer
triton-ascend refuses). With ``max_autotune_gemm_backends="TRITON"`` (upstream's own tests of
max-autotune use it) such a GEMM had no choice at all: a ``Linear(k, 1)`` with a dynamic batch
raised ``NoValidChoicesError`` in ``tuned_addmm``. Here ATen joins exactly there: the op's ATen
kernel is offered when a template-only request for an npu GEMM produced no candidate.
"""

from __future__ import annotations

from torch._inductor.kernel.bmm import aten_baddbmm, aten_bmm, bmm_template
from torch._inductor.kernel.mm import aten__int_mm, aten_addmm, aten_mm, mm_template
from torch._inductor.select_algorithm import ExternKernelChoice
from torch._inductor.utils import use_aten_gemm_kernels

# upstream's op names (the `name` its lowerings pass) -> the ATen kernel they would offer
ATEN_FOR_OP = {
    "mm": aten_mm,
    "addmm": aten_addmm,
    "bmm": aten_bmm,
    "baddbmm": aten_baddbmm,
    "int_mm": aten__int_mm,
}
# the op's main Triton template: only a request for it stands for "the templates" (upstream asks
# for other templates in requests of their own, e.g. addmm's contiguous_addmm, which offer
# nothing for most shapes: ATen joining there would race, and on npu-sim beat, every template)
MAIN_TEMPLATE = {
    "mm": mm_template,
    "addmm": mm_template,
    "int_mm": mm_template,
    "bmm": bmm_template,
    "baddbmm": bmm_template,
}


def aten_when_no_template(choices, ktcs, kernel_inputs, templates, op_name):
    """`ktcs` (the finalized template choices), or the op's ATen choice where they are empty."""
    if ktcs or kernel_inputs.device_type != "npu" or op_name not in ATEN_FOR_OP:
        return ktcs
    if not any(t is MAIN_TEMPLATE[op_name] for t in templates):
        return ktcs
    if use_aten_gemm_kernels() or any(isinstance(t, ExternKernelChoice) for t in templates):
        return ktcs  # ATen is offered already (by this request or upstream's own ATen request)
    return list(choices.get_ktc(kernel_inputs, ATEN_FOR_OP[op_name], op_name, {}))
