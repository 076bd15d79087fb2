"""Per-sub-kernel autotuning of npu combo kernels (``combo_kernel_per_subkernel_blocks``).

Upstream's ``_handle_combo_kernel_per_subkernel_blocks`` builds the tuning plan a combo
kernel carries in ``inductor_meta``: one group per set of sub-kernels with the same
heuristic inputs when ``combo_kernel_autotune_grouping`` is on (one group per sub-kernel
when off), each with its candidate configs, plus the warp/stage pairs to re-tune last.
``CachingAutotuner._combo_sequential_autotune`` then tunes group by group. Upstream fills
the groups with GPU candidates (up to 1024-element blocks, 4-8 warps); on npu the grouping
stays upstream's and each group's candidates become the npu candidates of a standalone
kernel of that shape (the tile generator: UB budget, vector cores), one warp, one stage.
"""

from __future__ import annotations

from npu_inductor_core import kernel_objects, tiles

GROUPS = "combo_tuning_groups"


def _candidates(
    heuristic: str,
    size_hints: dict,
    triton_meta: dict,
    dev: tiles.Device,
    *,
    exhaustive: bool,
    multibuffer: bool,
) -> list:
    if heuristic == "pointwise":
        return tiles.pointwise(
            size_hints, triton_meta, dev, exhaustive=exhaustive, multibuffer=multibuffer
        )
    return tiles.reduction(
        size_hints,
        triton_meta,
        dev,
        persistent=heuristic == "persistent_reduction",
        exhaustive=exhaustive,
        multibuffer=multibuffer,
    )


def _suffixed(kwargs: dict, index: int, skip_rblock: bool, signature: set) -> dict:
    """A sub-kernel's block kwargs under the combo kernel's names (XBLOCK -> XBLOCK_0)."""
    out = {}
    for key, value in kwargs.items():
        if skip_rblock and key.startswith("R") and "BLOCK" in key:
            continue  # a persistent reduction's R0_BLOCK is in its body
        out[f"{key}_{index}" if f"{key}_{index}" in signature else key] = value
    return out


def adapt(kernel, dev: tiles.Device, *, exhaustive: bool, multibuffer: bool) -> None:
    """Re-fill the tuning plan of ``kernel`` (an upstream-built per-sub-kernel-blocks combo
    kernel object) with npu candidates; its base config becomes every sub-kernel's first npu
    candidate. Kernels without a plan (no per-sub-kernel blocks, the stitched no-bench
    config) are left alone."""
    meta = kernel.inductor_meta
    combo = meta.get(kernel_objects.COMBO_META_KEY) or {}
    groups = meta.get(GROUPS)
    if not groups or "heuristic_0" not in combo:
        return
    signature = set(kernel.triton_meta.get("signature", ()))
    base: dict = {}
    for group in groups:
        first = group["member_indices"][0]
        heuristic = combo[f"heuristic_{first}"]
        cands = _candidates(
            heuristic,
            group["size_hints"],
            kernel.triton_meta,
            dev,
            exhaustive=exhaustive,
            multibuffer=multibuffer,
        )
        group["configs"] = cands
        for i in group["member_indices"]:
            base.update(_suffixed(cands[0].kwargs, i, group["skip_rblock"], signature))
    # keys upstream's base config has beyond the blocks (none on npu today) stay
    for key, value in kernel.configs[0].kwargs.items():
        if not key.split("_")[0].endswith("BLOCK"):
            base.setdefault(key, value)
    # a vector core runs one program: the warp/stage re-tune has one pair (two with multibuffer)
    meta["combo_warp_stage_candidates"] = [(1, 1)] + (
        [(1, tiles.MULTIBUFFER_STAGES)] if multibuffer else []
    )
    kernel.configs = [tiles.make(base)]


def has_plan(kernel) -> bool:
    return bool(kernel.inductor_meta.get(GROUPS))
