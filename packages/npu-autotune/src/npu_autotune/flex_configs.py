"""Flex-attention template configs for npu, Cube-aware, steered by
``max_autotune_flex_search_space``.

Upstream takes flex attention's tile lists from the device's config heuristic
(``InductorChoices.get_config_heuristics(device_type)``: CUDA/ROCm/XPU/CPU lists, else
``BaseConfigHeuristic``'s GPU lists with 4-8 warps and 3-5 stages). npu's is this class,
handed to npu-lowering's choices class through npu-inductor-core's ``choice_hooks`` (no
patch); upstream's semantics stay: no max-autotune -> the default tile only; max-autotune ->
the autotune list plus the default; ``max_autotune_flex_search_space="EXHAUSTIVE"`` -> every
tile of the exhaustive grid that fits. Every other list (GEMM, conv) is upstream's base one.

What "fits" means on a Cube core (device facts from npu-inductor-core: L0A/L0B/L0C, L1, UB;
upper bounds, as the GEMM pruning is): tiles are multiples of 16 (the fractal); the forward's
two products each fit the Cube (Q and P in L0A, K^T and V in L0B, the fp32 scores S and the
fp32 accumulator in L0C), the Q/K/V tiles times the pipeline stages fit L1, and what the
vector side keeps per program (S in fp32, P in the input dtype, the fp32 accumulator, the
row max and sum), each with its post-processed copy, fits the unified buffer by the one UB
model (npu-inductor-core's ``tiles.flex_fits``). The backward is checked per half (dK/dV over
(BLOCK_M1, BLOCK_N1), dQ over (BLOCK_M2, BLOCK_N2)); decoding per key block (the query rows
padded to one fractal). num_warps is 1 (a vector core runs one SIMD program).
"""

from __future__ import annotations

import functools
import itertools

from torch._inductor import config as inductor_config
from npu_inductor_core.torch_versions import template_heuristics
from npu_inductor_core import tiles

from .gemm_templates import CUBE, _device

_triton = template_heuristics("triton")  # moved in torch 2.14
BaseConfigHeuristic, FlexBwDConfig = _triton.BaseConfigHeuristic, _triton.FlexBwDConfig
FlexConfig, FlexDecodeConfig = _triton.FlexConfig, _triton.FlexDecodeConfig


ACC = 4  # fp32 scores and accumulators
SIZES = (16, 32, 64, 128, 256)
STAGES = (1, 2)


def _cube_pair(m: int, n: int, k: int, ds: int, dev) -> bool:
    """One product (m x k) @ (k x n) on the Cube: operands in L0A / L0B, result in L0C."""
    return (
        m * k * ds <= dev.l0a_bytes and k * n * ds <= dev.l0b_bytes and m * n * ACC <= dev.l0c_bytes
    )


def fwd_fits(bm: int, bn: int, d: int, stages: int, ds: int, dev) -> bool:
    if bm % CUBE or bn % CUBE:
        return False
    cube = _cube_pair(bm, bn, d, ds, dev) and _cube_pair(bm, d, bn, ds, dev)  # S = Q K^T, O += P V
    l1 = (bm * d + 2 * bn * d) * ds * max(1, stages) <= dev.l1_bytes
    # scores (fp32 and cast), the output accumulator, the row max and sum
    ub = tiles.flex_fits([(ACC, bm * bn), (ds, bm * bn), (ACC, bm * d), (ACC, bm), (ACC, bm)], dev)
    return cube and l1 and ub


def bwd_fits(m1: int, n1: int, m2: int, n2: int, d: int, stages: int, ds: int, dev) -> bool:
    if any(b % CUBE for b in (m1, n1, m2, n2)) or n1 % m1 or m2 % n2:  # upstream's static asserts
        return False
    # dK, dV: K/V rows n1 against q rows m1 (two fp32 accumulators of n1 x d)
    kv = _cube_pair(n1, m1, d, ds, dev) and _cube_pair(n1, d, m1, ds, dev)
    kv_ub = tiles.flex_fits(
        [(ACC, n1 * m1), (ACC, n1 * m1), (ds, n1 * m1), (ACC, n1 * d), (ACC, n1 * d)], dev
    )
    # dQ: q rows m2 against key rows n2 (one fp32 accumulator of m2 x d)
    q = _cube_pair(m2, n2, d, ds, dev) and _cube_pair(m2, d, n2, ds, dev)
    q_ub = tiles.flex_fits([(ACC, m2 * n2), (ACC, m2 * n2), (ds, m2 * n2), (ACC, m2 * d)], dev)
    l1 = (max(m1, m2) * d * 2 + max(n1, n2) * d * 2) * ds * max(1, stages) <= dev.l1_bytes
    return kv and kv_ub and q and q_ub and l1


def decode_fits(bn: int, d: int, stages: int, ds: int, dev) -> bool:
    return bn % CUBE == 0 and fwd_fits(CUBE, bn, d, stages, ds, dev)


class NpuFlexConfigHeuristic(BaseConfigHeuristic):
    """Flex attention's tile lists for npu; everything else is upstream's base heuristic."""

    # (BLOCK_M, BLOCK_N, num_stages): the first that fits is the default
    FWD_DEFAULTS = [(64, 64, 1), (32, 64, 1), (32, 32, 1), (16, 32, 1), (16, 16, 1)]
    FWD_AUTOTUNE = [
        (64, 64, 2),
        (64, 128, 1),
        (128, 64, 1),
        (32, 64, 2),
        (32, 128, 2),
        (128, 128, 1),
    ]
    BWD_DEFAULTS = [(32, 64, 64, 32, 1), (16, 32, 32, 16, 1), (16, 16, 16, 16, 1)]
    DECODE_DEFAULTS = [(64, 1), (32, 1), (16, 1)]

    @staticmethod
    def _ds(dtype) -> int:
        return getattr(dtype, "itemsize", 4)

    def get_flex_attn_fwd_configs(self, head_dim: int, *seq_len_and_dtype) -> list[FlexConfig]:
        # torch 2.13/2.14 pass (head_dim, dtype); torch 2.15 (head_dim, seq_len, dtype): the tiles
        # here depend on the Cube and UB, not on the sequence length
        dtype = seq_len_and_dtype[-1]
        dev, ds = _device(), self._ds(dtype)
        ok = lambda m, n, s: fwd_fits(m, n, head_dim, s, ds, dev)  # noqa: E731
        default = next(
            (FlexConfig(m, n, s, 1) for m, n, s in self.FWD_DEFAULTS if ok(m, n, s)),
            FlexConfig(16, 16, 1, 1),
        )
        if not inductor_config.max_autotune:
            return [default]
        if inductor_config.max_autotune_flex_search_space == "EXHAUSTIVE":
            return [
                FlexConfig(m, n, s, 1)
                for m, n, s in itertools.product(SIZES, SIZES, STAGES)
                if ok(m, n, s)
            ] or [default]
        out = [FlexConfig(m, n, s, 1) for m, n, s in self.FWD_AUTOTUNE if ok(m, n, s)]
        return out + ([default] if default not in out else [])

    def get_flex_attn_bwd_configs(self, head_dim: int, dtype) -> list[FlexBwDConfig]:
        dev, ds = _device(), self._ds(dtype)
        ok = lambda m1, n1, m2, n2, s: bwd_fits(m1, n1, m2, n2, head_dim, s, ds, dev)  # noqa: E731
        default = next(
            (FlexBwDConfig(*t[:4], t[4], 1) for t in self.BWD_DEFAULTS if ok(*t)),
            FlexBwDConfig(16, 16, 16, 16, 1, 1),
        )
        if not inductor_config.max_autotune:
            return [default]
        if inductor_config.max_autotune_flex_search_space == "EXHAUSTIVE":
            grid = itertools.product(SIZES[:4], SIZES[:4], SIZES[:4], SIZES[:4], STAGES)
            return [FlexBwDConfig(*t[:4], t[4], 1) for t in grid if ok(*t)] or [default]
        # upstream's symmetric pairing (M, N, N, M)
        out = [
            FlexBwDConfig(m, n, n, m, s, 1)
            for m in (16, 32, 64)
            for n in (32, 64, 128)
            for s in STAGES
            if ok(m, n, n, m, s)
        ]
        return out + ([default] if default not in out else [])

    def get_flex_decode_configs(self, head_dim: int, dtype) -> list[FlexDecodeConfig]:
        dev, ds = _device(), self._ds(dtype)
        ok = lambda n, s: decode_fits(n, head_dim, s, ds, dev)  # noqa: E731
        default = next(
            (FlexDecodeConfig(n, s, 1) for n, s in self.DECODE_DEFAULTS if ok(n, s)),
            FlexDecodeConfig(16, 1, 1),
        )
        if not inductor_config.max_autotune:
            return [default]
        if inductor_config.max_autotune_flex_search_space == "EXHAUSTIVE":
            return [
                FlexDecodeConfig(n, s, 1) for n, s in itertools.product(SIZES, STAGES) if ok(n, s)
            ] or [default]
        out = [FlexDecodeConfig(n, s, 1) for n in (32, 64, 128) for s in STAGES if ok(n, s)]
        return out + ([default] if default not in out else [])


@functools.cache
def _heuristic() -> NpuFlexConfigHeuristic:
    return NpuFlexConfigHeuristic()


def for_device(device_type: str):
    """choice_hooks: npu's config heuristic (None for other devices)."""
    return _heuristic() if device_type == "npu" else None
