"""The Ascend tiling model, as block-size configs for Inductor's Triton kernels.

A program runs on one vector core and loops over sub-blocks of its chunk of the tensor
(kernel.py; the grid is at most the vector-core count, grid.py); a config's block is one
sub-block, and its working set (a block of every tensor it touches) must fit the unified
buffer (UB). Rules, from torch_npu's tiling facts:
- per-program element budget = ub_bytes / min(pointer args, 3) / element bytes;
- blocks are powers of two and at least 32 bytes (8 float32);
- num_warps=1 (a vector core is one SIMD program), num_stages=1;
- the first config uses few, large programs (the largest block the UB allows): it is the
  one the interpreter runs and the one without autotuning; then configs with blocks that
  spread the work over about half the vector cores (an eighth under 128K elements), each
  once with ``multibuffer`` on Ascend (double buffering halves the budget). Past
  ``vector_cores`` blocks, programs loop instead of the grid growing.
"""

from __future__ import annotations

from npu_inductor_core.ascend_rules import INDIRECT_KEY, fit_to_ub, without_one_row_indirect  # noqa: F401 (re-exported)
# the device facts (UB the compiler plans, vector cores), one reader for every component;
# the compiling process records them in each kernel's inductor_meta (kernel.py) so that a
# compile worker, which opens no device, tiles for the real device, not the defaults
from npu_inductor_core.device import (  # noqa: F401 (re-exported)
    DEFAULT_UB, DEFAULT_VECTOR_CORES, FACTS_KEY, UB_950, Device, device, device_for)
from torch._inductor.runtime.runtime_utils import next_power_of_2
from triton import Config

ALIGN_BYTES = 32
# on Ascend a config with num_stages >= 2 is a multi-buffer (double-buffering) variant: it
# compiles with triton-ascend's multibuffer=True, every other config with multibuffer=False
MULTIBUFFER_STAGES = 2


def _floor_pow2(n: int) -> int:
    return 1 << (max(int(n), 1).bit_length() - 1)


def max_block_elements(dev: Device) -> int:
    """An upper bound on any block our tilings emit (npu-autotune's too): one buffer of
    one-byte elements filling the UB."""
    return _floor_pow2(dev.ub_bytes)


def element_budget(triton_meta: dict, dev: Device, elem_bytes: int = 4) -> int:
    """Elements of one block that fit the UB alongside the blocks of the other tensors."""
    pointers = sum(1 for ty in triton_meta.get("signature", {}).values() if str(ty).startswith("*"))
    return _floor_pow2(dev.ub_bytes // max(1, min(max(pointers, 1), 3)) // elem_bytes)


def _min_block(elem_bytes: int = 4) -> int:
    return max(1, ALIGN_BYTES // elem_bytes)


def make_config(kwargs: dict) -> Config:
    return Config(dict(kwargs), num_warps=1, num_stages=1)


def pointwise(size_hints: dict, triton_meta: dict, dev: Device) -> list[Config]:
    """1-3 dimensional pointwise kernels: blocks over x (and y, z) within the budget."""
    budget = element_budget(triton_meta, dev)
    dims = [d for d in ("x", "y", "z") if d in size_hints]
    sizes = {d: next_power_of_2(max(1, size_hints[d])) for d in dims}
    numel = 1
    for d in dims:
        numel *= sizes[d]
    out = []
    for programs in _program_targets(numel, dev):
        per_program = min(budget, max(_min_block(), next_power_of_2(-(-numel // programs))))
        blocks, left = {}, per_program
        for i, d in enumerate(dims):  # x, Inductor's innermost (contiguous) dimension, first
            # 32-byte aligned rows, even if masked; but a one-element axis gets a block of 1:
            # Inductor drops its mask (numel 1), so every extra lane would repeat the element's
            # store or atomic (index_add into a 0-d tensor added its source XBLOCK times)
            floor = _min_block() if i == 0 and sizes[d] > 1 else 1
            blocks[f"{d.upper()}BLOCK"] = b = max(floor, min(sizes[d], left))
            left = max(1, left // b)
        out.append(make_config({k: blocks[k] for k in sorted(blocks)}))
    return unique(out)


def reduction(size_hints: dict, triton_meta: dict, dev: Device, persistent: bool) -> list[Config]:
    """Rows of x reduced over r0_: XBLOCK rows per program, R0_BLOCK of the reduction per
    sub-block (persistent: the whole row, so no R0_BLOCK in the config)."""
    budget = element_budget(triton_meta, dev)
    xnumel = next_power_of_2(max(1, size_hints.get("x", 1)))
    rnumel = next_power_of_2(max(1, size_hints.get("r0_", 1)))
    rblock = rnumel if persistent else min(rnumel, max(_min_block(), budget // 4), 2048)
    max_x = max(1, min(xnumel, budget // rblock))
    out = []
    for programs in _program_targets(xnumel, dev):
        xblock = max(1, min(max_x, next_power_of_2(-(-xnumel // programs))))
        kwargs = {"XBLOCK": xblock} if persistent else {"XBLOCK": xblock, "R0_BLOCK": rblock}
        out.append(make_config({**kwargs, **tiled_rows(size_hints, max_x // xblock)}))
    return unique(out)


def tiled_rows(size_hints: dict, room: int) -> dict:
    """A tiled reduction (rows over x and y: triton.tile_reductions, or Inductor's own 2-D
    tiling choice) needs a YBLOCK too: the y rows that fit next to the x block (at least 1)."""
    if "y" not in size_hints:
        return {}
    return {"YBLOCK": max(1, min(next_power_of_2(max(1, size_hints["y"])), _floor_pow2(max(1, room))))}


def _program_targets(numel: int, dev: Device) -> list[int]:
    """Program counts to try, fewest first."""
    spread = max(1, dev.vector_cores // (8 if numel < 128 * 1024 else 2))
    return [1, spread, dev.vector_cores]


def unique(configs: list[Config]) -> list[Config]:
    seen, out = set(), []
    for c in configs:
        key = tuple(sorted(c.kwargs.items()))
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def fits_ub(config_kwargs: dict, triton_meta: dict, dev: Device, persistent_rblock: int | None = None) -> bool:
    """Whether a config's block fits the UB budget (used by tests and the validity check)."""
    numel = 1
    for k, v in config_kwargs.items():
        if k.endswith("BLOCK"):
            numel *= int(v)
    if persistent_rblock:
        numel *= persistent_rblock
    return numel <= element_budget(triton_meta, dev)


def is_multibuffer(cfg) -> bool:
    return (getattr(cfg, "num_stages", 1) or 1) >= MULTIBUFFER_STAGES


def compile_options(cfg) -> dict:
    """triton-ascend compile options that follow from a config: the multi-buffer setting it was
    tiled for (triton-ascend's own default, on, is never left to apply), one stage."""
    return {"multibuffer": is_multibuffer(cfg), "num_stages": 1}


def ub_estimate(config_kwargs: dict, triton_meta: dict, inductor_meta: dict | None = None,
                size_hints: dict | None = None, multibuffer: bool = False) -> int:
    """This model's UB bytes for a config: a block of every tensor it budgets for
    (``element_budget``: min(pointer args, 3) blocks of 4-byte elements), doubled when
    multi-buffered. The Ascend check compares it with what bishengir planned (its JSON
    report's ``ub_comparison``)."""
    numel = 1
    for k, v in config_kwargs.items():
        if k.endswith("BLOCK") and isinstance(v, int):
            numel *= v
    if size_hints and "R0_BLOCK" not in config_kwargs and any(k.startswith("r") for k in size_hints):
        numel *= next_power_of_2(max(1, int(size_hints.get("r0_", 1))))  # persistent: the whole row
    pointers = sum(1 for ty in triton_meta.get("signature", {}).values() if str(ty).startswith("*"))
    return numel * 4 * max(1, min(max(pointers, 1), 3)) * (2 if multibuffer else 1)
