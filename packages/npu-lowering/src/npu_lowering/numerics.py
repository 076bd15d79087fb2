"""Numerics decisions for npu kernels (issue 19), in one place.

- **Determinism** (``deterministic``, ``batch_invariant``,
  ``torch.use_deterministic_algorithms`` with ``write_are_deterministic_algorithms_enabled``):
  upstream keeps split reductions in deterministic mode, with a split factor computed from
  the device's core count (``InductorChoices.reduction_split_factor``), so the same model on
  a 24- and a 48-core part, or two differently tuned grids, sums in a different order. On npu
  a reduction then never splits across programs (no split reductions, no cooperative
  reductions) and reduction kernels keep one config (upstream's
  ``filter_reduction_configs_for_determinism`` over our candidates, so nothing is timed).
  Sub-block loops already give each output one program whatever the grid.
- **Signed zero** (``strict_signed_zero``, torch 2.14's flag; ``npu_lowering.config`` on
  2.13): ``-x`` and ``maximum``/``minimum`` of floats keep the sign of zero (``NpuTritonKernelOverrides``).
"""

from __future__ import annotations

import contextlib
import inspect

import torch
from torch._inductor import config as inductor_config
from torch._inductor.choices import InductorChoices

from . import config as npu_config
from . import small_gemm
from .fusion_choices import FusionChoices


def deterministic_requested() -> bool:
    """Inductor's deterministic modes, or PyTorch's deterministic algorithms where Inductor is
    told of them (``write_are_deterministic_algorithms_enabled``, as its kernels read it)."""
    return bool(
        inductor_config.deterministic
        or getattr(inductor_config, "batch_invariant", False)
        or (  # 2.11: no batch_invariant
            inductor_config.write_are_deterministic_algorithms_enabled
            and torch.are_deterministic_algorithms_enabled()
        )
    )


def strict_signed_zero() -> bool:
    upstream = getattr(inductor_config, "strict_signed_zero", None)  # torch >= 2.14
    return bool(npu_config.strict_signed_zero if upstream is None else upstream)


def template_fast_math():
    """``cutlass.use_fast_math`` on npu. On cuda it compiles CUTLASS's C++ GEMM templates
    with ``nvcc --use_fast_math`` (approximate transcendentals and division in their
    epilogues, ``codegen/cuda/compile_utils.py``); npu has no CUTLASS, its GEMM templates are
    Triton, so the flag gives their fused prologues and epilogues Inductor's Triton fast math
    (``use_fast_math``: ``tl_math`` instead of libdevice), the rest of the graph unchanged."""
    if inductor_config.cutlass.use_fast_math and not inductor_config.use_fast_math:
        return inductor_config.patch(use_fast_math=True)
    return contextlib.nullcontext()


def settings_key() -> str:
    """What of this module changes generated code (part of the FX graph cache key)."""
    return f"ssz{int(strict_signed_zero())}"


def row_fits_one_core(device, reduction_numel: int) -> bool:
    """Whether one output's reduction fits one vector core's UB in float32, twice (the loaded
    block and the accumulator). Such a row is one core's single pass of at most a UB of data,
    short next to an Ascend kernel launch; splitting it across cores (upstream's rule, for
    GPUs whose launches are cheap and whose cores are many) adds a second kernel and a GM round
    trip of the partial results. So a decode step's per-token reductions (RMSNorm, quantization
    scales over a hidden or MLP row) stay one kernel with the work around them."""
    from npu_inductor_core import tiles
    from npu_inductor_core.device import device as npu_device

    dev = npu_device(device.index or 0)
    return tiles.fits_buffers({"v": {4: 2}}, int(reduction_numel), dev)


def row_stays_on_chip(device, features) -> bool:
    """Whether a row reduction's kernel can hold its whole row in one core's UB, by the tile
    generator's fact for persistent configs (``tiles.row_kept_whole``: every buffer the
    kernel reads or writes as a float32 row plus two temporaries; its configs are fitted by
    the same fact, so one row of them fits). Such a row is read from GM once (a persistent
    reduction); upstream makes rows over 1024 elements a loop, whose statistic and
    normalising passes each read the row (an RMSNorm at hidden 4096 moved 1.5x its minimum GM
    bytes, by its TTIR)."""
    from npu_inductor_core import tiles
    from npu_inductor_core.device import device as npu_device

    rnumel = features.reduction_numel
    if not isinstance(rnumel, int) and not getattr(rnumel, "is_Integer", False):
        return False
    names = features.buf_accesses()
    int8 = any(_dtype_of(name) in (torch.int8, torch.uint8) for name in names)
    # a gather whose index is wrapped for negative values (``table[ids]``: a ``tl.where`` on
    # the loaded index) is rejected by Ascend's front end at one row a block
    # (tiles.without_one_row_indirect), so such a kernel's row stays whole only where two rows
    # fit; else it is looped, at two rows or more. An embedding's index is not wrapped: its row
    # of 4096 stays whole at one row (its plan passes both SoCs' compilers)
    rows = 2 if _wrapped_gathers(features) else 1
    return tiles.row_kept_whole(len(names), int(rnumel), npu_device(device.index or 0), int8, rows)


def _wrapped_gathers(features) -> bool:
    """Whether a node of the kernel indexes with a loaded value it wraps for negative values
    (upstream's ``indirect_indexing(..., wrap_neg=True)``, kept on the loop body's
    ``set_indirect*`` shims; unreadable counts as wrapped)."""
    for node in getattr(features, "node_schedule", ()):
        body = getattr(node, "_body", None)
        for name, shim in (getattr(body, "submodules", None) or {}).items():
            if name.startswith("set_indirect"):
                keywords = getattr(getattr(shim, "clone", None), "keywords", None) or {}
                if keywords.get("wrap_neg", True):
                    return True
    return False


def _dtype_of(name: str):
    from torch._inductor.virtualized import V

    try:
        return V.graph.get_dtype(name)
    except (KeyError, AttributeError):
        return None


def _inner(features, hint) -> bool:
    """Whether the kernel's reductions run along rows stored with stride 1. Inductor's INNER
    hint says so; a reduction over many rows (``num_splits``: 64 rows a core or more) is
    hinted DEFAULT at lowering, and a kernel of its own turns that back to INNER by its tiling
    scores, which a combo kernel's sub-kernel has none of (split QKV + RMSNorm at 256 tokens:
    Q's norm looped beside K's persistent one, its row read twice). So a DEFAULT kernel whose
    reductions read every buffer at stride 1 along the reduction is inner too."""
    from torch._inductor.dependencies import MemoryDep
    from torch._inductor.runtime.hints import ReductionHint

    if hint == ReductionHint.INNER:
        return True
    if hint != ReductionHint.DEFAULT or not features.reduction_nodes():
        return False
    return all(
        not isinstance(dep, MemoryDep)
        or dep.is_contiguous()
        or dep.stride1_for_last_dim(result_for_complex_expression=False)
        for node in features.reduction_nodes()
        for dep in node.read_writes.reads
    )


def _strict_rblock(features) -> bool:
    """Whether the kernel has a reduction whose block upstream fixes (batch-invariant sums:
    ``strict_reduction_rblock`` on torch 2.15, ``strict_sum_rblock`` on 2.14, none on 2.13):
    its persistence is upstream's."""
    for name in ("strict_reduction_rblock", "strict_sum_rblock"):
        fn = getattr(features, name, None)
        if fn is not None:
            return fn() is not None
    return False


# upstream's signature: (device, numel, reduction_numel) on torch 2.13, (features) on 2.11
_COOP_TAKES_DEVICE = (
    "device" in inspect.signature(InductorChoices.should_use_cooperative_reduction).parameters
)


class NpuChoices(FusionChoices):  # fusion order: npu-fusion's policy (fusion_choices.py)
    """Upstream's choices; on npu a reduction is not split across programs under determinism
    or where one output's row fits one core (``row_fits_one_core``), an inner reduction whose
    row stays on chip is persistent (``row_stays_on_chip``), and
    the GEMM templates and config heuristics components register with npu-inductor-core's
    ``choice_hooks`` join upstream's.
    Installed through Inductor's ``inductor_choices_class`` (only when unset), so every other
    device's choices are upstream's."""

    # a method, not a staticmethod: torch 2.13 declares it static, torch 2.14 and 2.15 a method
    # (it reads self's thresholds); Inductor calls it on the choices instance in each
    def reduction_split_factor(
        self, device, reduction_numel_hint, numel_hint, inner_reduction
    ) -> int:
        if device.type == "npu" and (
            deterministic_requested() or row_fits_one_core(device, reduction_numel_hint)
        ):
            return 1
        return super().reduction_split_factor(
            device, reduction_numel_hint, numel_hint, inner_reduction
        )

    @staticmethod
    def should_use_cooperative_reduction(*args, **kwargs) -> bool:
        # torch 2.13 passes (device, numel, reduction_numel); torch 2.11 passes (features)
        # and reads the graph's current device, as we do then
        if _COOP_TAKES_DEVICE:
            device = kwargs["device"] if "device" in kwargs else args[0]
        else:
            from torch._inductor.virtualized import V

            device = V.graph.get_current_device_or_throw()
        if device.type == "npu" and deterministic_requested():
            return False
        return InductorChoices.should_use_cooperative_reduction(*args, **kwargs)

    @staticmethod
    def should_use_persistent_reduction(features, cooperative_reduction) -> bool:
        # npu: an inner reduction whose row stays on chip is persistent (one read of the row);
        # upstream's answer elsewhere, and wherever it already says yes, the user turned
        # persistent reductions off, or upstream fixes the reduction's block
        from torch._inductor.virtualized import V

        upstream = InductorChoices.should_use_persistent_reduction(features, cooperative_reduction)
        if (
            upstream
            or cooperative_reduction
            or not inductor_config.triton.persistent_reductions
            or _strict_rblock(features)
        ):
            return upstream
        device = V.graph.get_current_device_or_throw()
        if device.type != "npu" or not _inner(features, features.get_reduction_hint()):
            return upstream
        return row_stays_on_chip(device, features)

    def get_template_configs(self, kernel_inputs, templates, op_name, kwarg_overrides=None):
        # npu GEMMs: the templates components add (npu-autotune's swap-A/B candidates for M << N)
        # (not under default mode's one-tile small-GEMM policy: one choice, nothing timed)
        if kernel_inputs.device_type == "npu" and not small_gemm.one_tile():
            from npu_inductor_core import choice_hooks

            templates = choice_hooks.with_extra_templates(kernel_inputs, templates, op_name)
        return super().get_template_configs(kernel_inputs, templates, op_name, kwarg_overrides)

    def _finalize_template_configs(
        self, template_choices, kernel_inputs, templates, op_name, kwarg_overrides=None
    ):
        # an npu GEMM no template takes gets ATen, as upstream's lowerings do (gemm_aten_fallback.py)
        from .gemm_aten_fallback import aten_when_no_template

        ktcs = super()._finalize_template_configs(
            template_choices, kernel_inputs, templates, op_name, kwarg_overrides
        )
        return aten_when_no_template(self, ktcs, kernel_inputs, templates, op_name)

    def get_config_heuristics(self, device_type="cuda"):
        # npu: a component's config lists (npu-autotune's Cube-aware flex-attention tiles)
        if device_type == "npu":
            from npu_inductor_core import choice_hooks

            heuristic = choice_hooks.heuristic_for(device_type)
            if heuristic is not None:
                return heuristic
        return super().get_config_heuristics(device_type)

    def uuid(self) -> str:
        return "npu-lowering.NpuChoices-5"


def install_choices() -> bool:
    """Make ``NpuChoices`` Inductor's choices class unless the user chose one."""
    if inductor_config.inductor_choices_class is not None:
        return False
    inductor_config.inductor_choices_class = NpuChoices
    return True
