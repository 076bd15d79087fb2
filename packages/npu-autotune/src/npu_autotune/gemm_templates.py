"""GEMM template candidates for npu: which Triton mm/bmm/addmm tile configs upstream's
templates are autotuned over on device "npu" (max_autotune / max_autotune_gemm).

Registered through upstream's template-heuristic registry (``register_template_heuristic``,
keyed by template, device and op), so ``tuned_mm``/``tuned_addmm``/``tuned_bmm`` and every
flag they read (max_autotune_gemm_backends, max_autotune_gemm_search_space, multi-kernel
hints, max_mm_configs) work unchanged; only the candidate list is ours.

Why these tiles (Ascend cube facts, DESIGN.md): cube tiles are multiples of 16; the fp32
accumulator of a BLOCK_M x BLOCK_N tile is post-processed by the vector unit (the fused
epilogue), so the accumulator and its post-processed copy must fit the unified buffer, priced
by the one UB model (npu-inductor-core's ``tiles.gemm_epilogue_fits``: at most 128 x 128 fp32
elements on 910B and 950); num_warps means nothing to a cube core (1); triton-ascend pipelines loads itself
(num_stages 1, plus 2 for the larger K tiles where double buffering of L1 helps). With
max_autotune_prune_choices_based_on_shared_mem a tile is also pruned when it would
overflow the Cube's L1 or L0A/L0B/L0C (the device facts' figures, from bishengir's target
spec), upstream's shared-memory bound read for a cube core.

npu-autotune's config adds what nvgemm's flags do for CUDA: decode supplements
(``gemm_supplement_configs``: ``DECODE_TILES`` for M <= 32) and a cap on the candidates
profiled per GEMM (``gemm_max_profiling_configs``).
"""

from __future__ import annotations

import itertools
from typing import Any

from torch._inductor.kernel.bmm import bmm_template
from torch._inductor.kernel.mm import mm_template
from torch._inductor.kernel.mm_plus_mm import mm_plus_mm_template
from npu_inductor_core.torch_versions import template_heuristics
from . import config as npu_config
from npu_inductor_core import tiles

# the template-heuristics package moved in torch 2.14 (torch_versions.template_heuristics)
register_template_heuristic = template_heuristics("registry").register_template_heuristic
_triton = template_heuristics("triton")
AddMMConfigMixin, BaseConfigHeuristic, GemmConfig = (
    _triton.AddMMConfigMixin,
    _triton.BaseConfigHeuristic,
    _triton.GemmConfig,
)
INT8MMTemplateConfigMixin, MMPlusMMTemplateConfigMixin = (
    _triton.INT8MMTemplateConfigMixin,
    _triton.MMPlusMMTemplateConfigMixin,
)
MMTemplateConfigMixin = _triton.MMTemplateConfigMixin


DEVICE = "npu"
CUBE = 16  # cube tile edge: every block size is a multiple
ACC_BYTES = 4  # fp32 / int32 accumulator


def _device() -> tiles.Device:
    import torch

    try:
        index = torch.npu.current_device()
    except Exception:  # compile worker without a device: tiles.device gives the 910B defaults
        index = 0
    return tiles.device(index)


def _ub_bytes() -> int:
    return _device().ub_bytes


def exceeds_cube(
    block_m: int, block_n: int, block_k: int, num_stages: int, dtype_size: int, dev
) -> str | None:
    """Which Cube buffer a GEMM tile overflows (None: it fits): the A and B tiles in L1, once
    per pipeline stage; each of them in L0A / L0B; the fp32 accumulator in L0C. An upper
    bound, as upstream's shared-memory estimate is (bishengir may split K into L0-sized
    steps), so it prunes only under max_autotune_prune_choices_based_on_shared_mem."""
    a, b = block_m * block_k * dtype_size, block_k * block_n * dtype_size
    if (a + b) * max(1, num_stages) > dev.l1_bytes:
        return "L1"
    if a > dev.l0a_bytes:
        return "L0A"
    if b > dev.l0b_bytes:
        return "L0B"
    if block_m * block_n * ACC_BYTES > dev.l0c_bytes:
        return "L0C"
    return None


def fits(
    block_m: int, block_n: int, block_k: int, ub_bytes: int | None = None, accumulators: int = 1
) -> bool:
    """A tile the cube and the epilogue can hold: multiples of 16, and the vector epilogue of
    its fp32 accumulator(s) within the UB (``ub_bytes``, default the device's) by the one UB
    model (``tiles.gemm_epilogue_fits``)."""
    if any(b % CUBE for b in (block_m, block_n, block_k)):
        return False
    return tiles.gemm_epilogue_fits(block_m, block_n, _device(), accumulators, ub_bytes=ub_bytes)


# (BLOCK_M, BLOCK_N, BLOCK_K, num_stages, num_warps); upstream scales them down to the problem.
# The first is the one tile used when a single config is asked for (npu-lowering's small-GEMM
# templates in default mode: max_mm_configs=1): a middle tile, scaled down for small M/N/K.
DEFAULT_TILES = [
    (64, 64, 64, 1, 1),
    (16, 16, 16, 1, 1),
    (32, 32, 32, 1, 1),
    (64, 64, 32, 1, 1),
    (64, 64, 64, 2, 1),
    (64, 128, 64, 2, 1),
    (128, 64, 64, 2, 1),
    (128, 128, 32, 1, 1),
    (128, 128, 64, 2, 1),
    (64, 64, 128, 2, 1),
    (128, 64, 128, 2, 1),
]


# decode shapes (M <= DECODE_M, e.g. one token per sequence): a short M edge and long N/K
# edges, so a few programs stream B through the Cube. Each fits the Cube for fp32 with double
# buffering (B tile k*n*4 <= 64 KiB L0B; (A+B)*2 <= 512 KiB L1; accumulator <= 32 KiB), and
# passes the Ascend check (bishengir HIVM on 910B2 and 950). Not (16, 64, 256): it compiles,
# but on 950 the UB model estimates it 0.7% under bishengir's figure.
DECODE_M = 32
DECODE_TILES = [
    (16, 128, 128, 2, 1),
    (16, 256, 64, 2, 1),
    (32, 256, 64, 2, 1),
]


def _hint(x) -> int | None:
    """A static size, or the size hint of a symbolic one (None where there is none)."""
    try:
        return int(x)
    except TypeError:
        from torch._inductor.virtualized import V

        try:
            return int(V.graph.sizevars.optimization_hint(x))
        except Exception:
            return None


def is_decode(m) -> bool:
    hint = _hint(m)
    return hint is not None and hint <= DECODE_M


def exhaustive_tiles(ub_bytes: int | None = None) -> list[tuple[int, int, int, int, int]]:
    """max_autotune_gemm_search_space="EXHAUSTIVE": every power-of-two tile 16-256 that fits."""
    sizes = [16, 32, 64, 128, 256]
    return [
        (m, n, k, s, 1)
        for m, n, k in itertools.product(sizes, repeat=3)
        for s in (1, 2)
        if fits(m, n, k, ub_bytes)
    ]


class NpuGemmConfigHeuristic(BaseConfigHeuristic):
    """Tile lists for npu; upstream's scaling, dedup and hint handling are kept."""

    decode_supplements = (
        True  # decode tiles too (mm+mm keeps its short list: two products per program)
    )

    def __init__(self) -> None:
        super().__init__()
        ub = tiles.DEFAULT_UB  # class singleton: built once; _filter_configs re-checks at use
        self.mm_configs = [GemmConfig(*t) for t in DEFAULT_TILES if fits(*t[:3], ub)]
        self.exhaustive_configs = [GemmConfig(*t, group_m=8) for t in exhaustive_tiles(ub)]
        # int8 and mm+mm use the same cube tiles (int8 needs BLOCK_K >= 32: upstream's scaling)
        self.int8_mm_configs = [GemmConfig(*t) for t in DEFAULT_TILES if t[2] >= 32]
        self.mm_plus_mm_configs = [GemmConfig(*t) for t in DEFAULT_TILES[:6]]

    def _get_exceeding_shared_memory_checker(
        self, has_sm_layout_conversion, layout_conversion_byte_size
    ):
        # max_autotune_prune_choices_based_on_shared_mem on npu: a cube core has no shared
        # memory; its L1 and L0A/L0B/L0C buffers are what a GEMM tile must fit
        dev = _device()

        def exceeds(c, dtype_size: int) -> bool:
            return (
                exceeds_cube(c.block_m, c.block_n, c.block_k, c.num_stages, dtype_size, dev)
                is not None
            )

        return exceeds

    def preprocess_mm_configs(self, m, n, k, configs, *args: Any, **kwargs: Any):
        """Upstream's scaling, pruning and dedup, with our decode supplements after the
        default tile and the profiling cap applied to the final candidates."""
        if (
            self.decode_supplements
            and npu_config.gemm_supplement_configs
            and is_decode(m)
            and configs
        ):
            configs = [configs[0], *(GemmConfig(*t) for t in DECODE_TILES), *configs[1:]]
        out = super().preprocess_mm_configs(m, n, k, configs, *args, **kwargs)
        cap = npu_config.gemm_max_profiling_configs
        return itertools.islice(out, cap) if cap else out

    def _filter_configs(self, configs):
        # the device's own unified buffer (Ascend 950: 256 KiB) decides what fits
        ub = _ub_bytes()
        return [
            c for c in super()._filter_configs(configs) if fits(c.block_m, c.block_n, c.block_k, ub)
        ]


def vector_gemm(kernel_inputs) -> bool:
    """M=1 or N=1 (a matrix-vector product): upstream's GEMM templates index A by ``rm % M``
    (B by ``rn % N``), which folds to a zero-stride pointer that triton-ascend's
    triton-adapter-opt refuses ("strides must not be zero"); no template candidate then (ATen,
    as npu-lowering's small-GEMM policy decides in default mode)."""
    m, n, _ = kernel_inputs.mnk_symbolic()
    return _hint(m) == 1 or _hint(n) == 1


class NoVectorGemms:
    """First base of npu's template heuristics: no candidates for M=1 / N=1 (vector_gemm)."""

    def _valid(self, kernel_inputs) -> bool:
        return not vector_gemm(kernel_inputs) and super()._valid(kernel_inputs)


@register_template_heuristic(mm_template.uid, DEVICE)
@register_template_heuristic(bmm_template.uid, DEVICE)
class NpuMMTemplateConfigHeuristic(NoVectorGemms, MMTemplateConfigMixin, NpuGemmConfigHeuristic):
    """mm and bmm on npu."""


@register_template_heuristic(mm_template.uid, DEVICE, op_name="addmm")
@register_template_heuristic(bmm_template.uid, DEVICE, op_name="baddbmm")
class NpuAddMMTemplateConfigHeuristic(AddMMConfigMixin, NpuMMTemplateConfigHeuristic):
    """addmm and baddbmm on npu (the bias joins the epilogue)."""


@register_template_heuristic(mm_template.uid, DEVICE, op_name="int_mm")
class NpuInt8MMTemplateConfigHeuristic(
    NoVectorGemms, INT8MMTemplateConfigMixin, NpuGemmConfigHeuristic
):
    """int8 x int8 -> int32 on npu."""

    def __init__(self) -> None:
        super().__init__()
        self.mm_configs = self.int8_mm_configs
        self.exhaustive_configs = self.int8_mm_configs


@register_template_heuristic(mm_plus_mm_template.uid, DEVICE)
class NpuMMPlusMMTemplateConfigHeuristic(MMPlusMMTemplateConfigMixin, NpuGemmConfigHeuristic):
    """mm(a, b) + mm(c, d) in one kernel on npu."""

    def __init__(self) -> None:
        super().__init__()
        self.decode_supplements = False
        self.mm_configs = self.mm_plus_mm_configs
        self.exhaustive_configs = self.mm_plus_mm_configs
