"""Swap-A/B GEMM candidates for npu (the NPU equivalent of nvgemm's swap-AB).

For ``mm``/``addmm`` with M much smaller than N (``M * gemm_swap_ab_ratio <= N``: decode and
small-batch linears), max-autotune also benchmarks a template that computes the transposed
product ``C^T = B^T A^T`` on the Cube: the long N edge is the left operand (the Cube's
L0A side, the rows of its fractal output) and the short M edge the right (L0B), the program
grid walks N tiles first so programs that share an A column block are neighbours, and the
fp32 accumulator ``acc_t`` (BLOCK_N x BLOCK_M) is transposed once in the unified buffer
before upstream's epilogue stores C (a contiguous store and the same fused epilogue as
upstream's mm template). Whether it wins is decided by benchmarking, like any candidate.

How it joins: npu-lowering's choices class asks npu-inductor-core's ``choice_hooks`` for
extra templates (no upstream patch); this module offers ``mm_swap_ab_template`` wherever
upstream offered its ``mm_template`` for an npu GEMM, and its configs come from upstream's
template-heuristic registry (``register_template_heuristic``), so ``max_autotune_gemm_search_space``,
``max_autotune_gemm_backends``, ``max_mm_configs``, the Cube pruning and the profiling
cap apply to it as to the plain template. ``gemm_swap_ab`` off: no swap candidate.

Tiles (BLOCK_M, BLOCK_N, BLOCK_K, stages, warps): short M, long N; each fits the Cube for
fp32 with its stages (the B^T tile <= 64 KiB L0A, the A^T tile <= L0B, (A+B) x stages <= L1,
the accumulator <= L0C) and the unified buffer with both accumulator copies (<= half the UB).
"""

from __future__ import annotations

from torch._inductor.kernel.mm import mm_template
from torch._inductor.kernel.mm_common import mm_grid
from torch._inductor.select_algorithm import TritonTemplate
from npu_inductor_core.torch_versions import template_heuristics
from . import config as npu_config
from npu_inductor_core import tiles
from .gemm_templates import (
    DEVICE,
    NpuGemmConfigHeuristic,
    _hint,
    exhaustive_tiles,
    fits,
    vector_gemm,
)

# the template-heuristics package moved in torch 2.14 (torch_versions.template_heuristics)
register_template_heuristic = template_heuristics("registry").register_template_heuristic
_triton = template_heuristics("triton")
AddMMConfigMixin, GemmConfig, MMTemplateConfigMixin = (
    _triton.AddMMConfigMixin,
    _triton.GemmConfig,
    _triton.MMTemplateConfigMixin,
)


SWAP_TILES = [
    (16, 128, 64, 1, 1),
    (16, 256, 64, 2, 1),
    (32, 128, 64, 2, 1),
    (16, 128, 128, 2, 1),
    (32, 256, 32, 1, 1),
]

SOURCE = r"""
{{def_kernel("A", "B")}}
    M = {{size("A", 0)}}
    N = {{size("B", 1)}}
    K = {{size("A", 1)}}
    if M * N == 0:
        # early exit due to zero-size input(s)
        return
    stride_am = {{stride("A", 0)}}
    stride_ak = {{stride("A", 1)}}
    stride_bk = {{stride("B", 0)}}
    stride_bn = {{stride("B", 1)}}

    # swap A/B: programs walk the tiles of C^T = B^T A^T, N tiles first (GROUP_M of them
    # share one block of A's rows)
    pid = tl.program_id(0).to(INDEX_DTYPE)
    grid_m = (M + BLOCK_M - 1) // BLOCK_M
    grid_n = (N + BLOCK_N - 1) // BLOCK_N
    width = GROUP_M * grid_m
    group_id = pid // width
    group_size = min(grid_n - group_id * GROUP_M, GROUP_M)
    pid_n = group_id * GROUP_M + (pid % group_size)
    pid_m = (pid % width) // (group_size)

    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(INDEX_DTYPE)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(INDEX_DTYPE)
    offs_a_m = rm % M
    offs_b_n = rn % N
    offs_k = tl.arange(0, BLOCK_K).to(INDEX_DTYPE)
    acc_t = tl.zeros((BLOCK_N, BLOCK_M), dtype=ACC_TYPE)

    for k_idx in range(0, tl.cdiv(K, BLOCK_K)):
        {% if not EVEN_K %}
        a_mask = offs_k[None, :] < (K - k_idx * BLOCK_K)
        {% endif %}
        a_k_idx_vals = offs_k[None, :] + (k_idx * BLOCK_K)

        idx_m = offs_a_m[:, None]
        idx_n = a_k_idx_vals
        {{load_input("A", "a", ("idx_m", "idx_n"), mask=None if EVEN_K else "a_mask",
                     indent_width=8, index_shape=("BLOCK_M", "BLOCK_K"))}}

        # B^T's tile (BLOCK_N x BLOCK_K) loaded as such: contiguous along K where B is a
        # transposed weight (a linear layer's), the left operand of the transposed product
        idx_m = a_k_idx_vals
        idx_n = offs_b_n[:, None]
        {{load_input("B", "bt", ("idx_m", "idx_n"), mask=None if EVEN_K else "a_mask",
                     indent_width=8, index_shape=("BLOCK_N", "BLOCK_K"))}}

        acc_t += tl.dot(bt, tl.trans(a), allow_tf32=ALLOW_TF32, out_dtype=ACC_TYPE)

    acc = tl.trans(acc_t)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M).to(INDEX_DTYPE)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N).to(INDEX_DTYPE)
    idx_m = rm[:, None]
    idx_n = rn[None, :]
    mask = (idx_m < M) & (idx_n < N)

    # inductor generates a suffix
    {{store_output(("idx_m", "idx_n"), "acc", "mask", val_shape=("BLOCK_M", "BLOCK_N"))}}
"""

mm_swap_ab_template = TritonTemplate(
    name="npu_mm_swap_ab",
    grid=mm_grid,
    source=SOURCE,
    cache_codegen_enabled_for_template=True,
)


def wanted(m, n) -> bool:
    """M much smaller than N (size hints for symbolic sizes), with the flag on."""
    if not npu_config.gemm_swap_ab:
        return False
    hm, hn = _hint(m), _hint(n)
    return hm is not None and hn is not None and hm * npu_config.gemm_swap_ab_ratio <= hn


def extra_templates(kernel_inputs, templates, op_name) -> list:
    """choice_hooks: the swap template goes wherever upstream offered its mm template (mm,
    addmm; not the autoheuristic's "mm-ah" pass, whose learned ranking knows no swap)."""
    if op_name in ("mm", "addmm") and any(t is mm_template for t in templates):
        return [mm_swap_ab_template]
    return []


class _SwapConfigs(NpuGemmConfigHeuristic):
    decode_supplements = False  # its own short-M tiles

    def __init__(self) -> None:
        super().__init__()
        self.mm_configs = [GemmConfig(*t) for t in SWAP_TILES]
        ub = tiles.DEFAULT_UB  # class singleton: built once; _filter_configs re-checks at use
        self.exhaustive_configs = [
            GemmConfig(*t, group_m=8) for t in exhaustive_tiles(ub) if t[0] < t[1]
        ]

    def _filter_configs(self, configs):
        # both copies of the accumulator (acc_t and its transpose) live in the unified buffer
        out = super()._filter_configs(configs)
        return [c for c in out if fits(c.block_m, c.block_n, c.block_k, accumulators=2)]


@register_template_heuristic(mm_swap_ab_template.uid, DEVICE)
class NpuSwapABTemplateConfigHeuristic(MMTemplateConfigMixin, _SwapConfigs):
    """mm on npu, transposed product."""

    def _valid(self, kernel_inputs) -> bool:  # the mixin's says always
        m, n, _ = kernel_inputs.mnk_symbolic()
        return wanted(m, n) and not vector_gemm(kernel_inputs)


@register_template_heuristic(mm_swap_ab_template.uid, DEVICE, op_name="addmm")
class NpuSwapABAddMMTemplateConfigHeuristic(AddMMConfigMixin, NpuSwapABTemplateConfigHeuristic):
    """addmm on npu, transposed product (the bias joins the epilogue)."""
