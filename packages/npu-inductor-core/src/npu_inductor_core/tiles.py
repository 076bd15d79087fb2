"""The one tile generator: block-size configs for npu's Triton kernels, every block sized by
the one UB model (``ub_model``).

Every config source uses it: npu-lowering's default-mode heuristics, npu-autotune's
candidates, coordinate descent, the GEMM and flex-attention tiles, and npu-fusion's refusal
rule (through ``buffers_bytes``). None of them prices the unified buffer (UB) itself.

A program runs on one vector core and loops over sub-blocks of its chunk of the tensor; a
config's block is one sub-block. Before a kernel's body is read, a block is capped by the UB
model's floor (``ub_model.floor_bytes``) of one block of each of up to three pointer
arguments, each of its own dtype (``block_buffers``): ``element_budget`` is the largest
power-of-two block for which that fits the device's UB, the largest any body could fit.
Then ``fit_to_ub`` prices each config on the kernel's body (``ub_model.estimate``) and
halves its outer blocks until it fits. Cube tiles (GEMM epilogues, flex attention) and the
fusion rule price their buffers with ``ub_model.estimate_buffers``.

Rules: blocks are powers of two and the innermost covers at least 32 bytes; num_warps=1 (a
vector core is one SIMD program); the first config uses few, large programs (the largest
block the UB allows: the one the interpreter runs and the one without autotuning), then
blocks that spread the work over about half the vector cores (an eighth under 128K
elements) and all of them. A multi-buffer variant is marked ``num_stages=2``: on Ascend that
compiles with triton-ascend's ``multibuffer=True`` (loads held twice), every other config
with ``multibuffer=False``.
"""

from __future__ import annotations

import functools

from torch._inductor.runtime.runtime_utils import next_power_of_2  # noqa: F401 (re-exported)
from torch._inductor.runtime.triton_compat import (
    Config,
)  # triton.Config (torch is the one dependency)

from . import ub_model
from .ub_profile import _DTYPE_BYTES, ALIGN  # one table of element sizes, one UB block
from .ascend_rules import (  # noqa: F401 (re-exported)
    INDIRECT_KEY,
    UB_OVERFLOW,
    fit_to_ub,
    fits_ub_estimate,
    soc_family,
    ub_overflow,
    without_one_row_indirect,
)

# the device facts (UB the compiler plans, vector cores): the kernel's recorded facts first, so
# a compile worker, which opens no device, tiles for the real SoC
from .device import (  # noqa: F401 (re-exported)
    DEFAULT_UB,
    DEFAULT_VECTOR_CORES,
    FACTS_KEY,
    UB_950,
    Device,
    device,
    device_for,
)

ALIGN_BYTES = ALIGN  # innermost blocks cover at least one UB block (32 bytes)
MULTIBUFFER_STAGES = 2


def _pointers(triton_meta: dict) -> list[tuple[str, str]]:
    return [
        (name, str(t)[1:])
        for name, t in triton_meta.get("signature", {}).items()
        if str(t).startswith("*")
    ]


def element_bytes(triton_meta: dict) -> int:
    """The widest element among the pointer arguments."""
    return max((_DTYPE_BYTES.get(t, 4) for _, t in _pointers(triton_meta)), default=4)


# a block of at most this many pointer arguments caps a block before the body is read
CAP_POINTERS = 3


def block_buffers(triton_meta: dict) -> dict:
    """The buffers that cap a block before the kernel's body is read, in
    ``ub_model.estimate_buffers``' form: one block of each of the (up to three, widest first)
    pointer arguments, each of its own dtype."""
    ptrs = _pointers(triton_meta) or [("out_ptr0", "fp32")]
    counts: dict = {"v": {}}
    for _, t in sorted(ptrs, key=lambda p: -_DTYPE_BYTES.get(p[1], 4))[:CAP_POINTERS]:
        nbytes = _DTYPE_BYTES.get(t, 4)
        counts["v"][nbytes] = counts["v"].get(nbytes, 0) + 1
    return counts


def _family(dev: Device) -> str:
    return soc_family(dev.soc)


def buffers_bytes(
    counts: dict,
    tile: int,
    dev: Device | None,
    multibuffer: bool = False,
    family: str | None = None,
) -> int:
    """UB bytes of ``counts`` buffers of ``tile`` elements on the device (or the UB model's
    calibration ``family``): ``ub_model.estimate_buffers``."""
    return ub_model.estimate_buffers(
        counts, max(1, int(tile)), multibuffer, family or _family(dev or Device())
    )


def fits_buffers(
    counts: dict, tile: int, dev: Device, multibuffer: bool = False, ub_bytes: int | None = None
) -> bool:
    """Whether ``counts`` buffers of ``tile`` elements fit the device's UB (or ``ub_bytes``)."""
    return buffers_bytes(counts, tile, dev, multibuffer) <= (
        dev.ub_bytes if ub_bytes is None else ub_bytes
    )


def max_block_elements(dev: Device) -> int:
    """An upper bound on any block the generator emits: one-byte elements filling the UB."""
    return 1 << (max(int(dev.ub_bytes), 1).bit_length() - 1)


@functools.lru_cache(maxsize=1024)
def _budget(counts_key: tuple, ub_bytes: int, multibuffer: bool) -> int:
    counts: dict = {}
    for cls, nbytes, n in counts_key:
        counts.setdefault(cls, {})[nbytes] = n
    tile = 1
    while tile < ub_bytes and ub_model.floor_bytes(counts, tile * 2, multibuffer) <= ub_bytes:
        tile *= 2
    return tile


def element_budget(triton_meta: dict, dev: Device, multibuffer: bool = False) -> int:
    """Elements of one block (a power of two) for which a block of each pointer argument
    (``block_buffers``) fits the UB at the UB model's floor (``ub_model.floor_bytes``): the
    largest block any body of the kernel could fit. Once the body is read, ``fit_to_ub``
    prices it (``ub_model.estimate``) and shrinks the block where the body needs more."""
    counts = block_buffers(triton_meta)
    key = tuple(sorted((cls, b, n) for cls, by in counts.items() for b, n in by.items()))
    return _budget(key, int(dev.ub_bytes), bool(multibuffer))


def block_numel(kwargs: dict, persistent_rnumel: int | None = None) -> int:
    numel = 1
    for k, v in kwargs.items():
        if k.endswith("BLOCK") and isinstance(v, int):
            numel *= v
    return numel * (persistent_rnumel or 1)


def is_multibuffer(cfg) -> bool:
    return (getattr(cfg, "num_stages", 1) or 1) >= MULTIBUFFER_STAGES


def compile_options(cfg) -> dict:
    """triton-ascend compile options that follow from a config: the multi-buffer setting it was
    tiled for (triton-ascend's own default, on, is never left to apply), one stage."""
    return {"multibuffer": is_multibuffer(cfg), "num_stages": 1}


# a persistent row's float32 temporaries besides its buffers (the upcast row and a product)
ROW_TEMPORARIES = 2


def row_buffers(buffers: int) -> dict:
    """The buffers a persistent reduction keeps for a block of whole rows, in
    ``ub_model.estimate_buffers``' form: each buffer the kernel reads or writes as a float32
    value row (loads are upcast, stores computed in float32) and ``ROW_TEMPORARIES`` more."""
    return {"v": {4: max(1, int(buffers)) + ROW_TEMPORARIES}}


def rows_fit(buffers: int, block: int, dev: Device, multibuffer: bool = False) -> bool:
    """Whether a persistent reduction's block of whole rows (``block`` elements: rows x the
    power-of-two row) fits the UB by ``row_buffers``: the one fact both the choice to keep a
    row whole (npu-lowering's ``row_stays_on_chip``, at one row) and the persistent configs'
    fit (``fits_ub``) use, so a row kept whole has a config that fits."""
    return fits_buffers(row_buffers(buffers), block, dev, multibuffer)


def row_kept_whole(
    buffers: int, rnumel: int, dev: Device, int8: bool = False, rows: int = 1
) -> bool:
    """Whether a reduction's row (``rnumel`` elements, a power of two in its block) can be
    held whole by one core: ``rows`` rows (more than one for a kernel whose configs keep more,
    as ``without_one_row_indirect`` has a wrapped gather's) fit by ``rows_fit``. Not on
    910B-class parts for a row converted to 8-bit integers: bishengir's 910B plans for such rows
    are above ``rows_fit``'s figure even with the cast done on a flat view (npu-lowering's
    narrow_cast; the two-dimensional cast kept about 420 bytes an element): a per-token quant
    row of 4096 planned 193,124 B against 163,566 B by the row buffers, SwiGLU + quant's row of
    2048 167,488 B (82 bytes an element), so such a row stays a loop there (the 950 planned
    143,456 B and 32,802 B for them, below its own figures)."""
    if int8 and _family(dev) == "910B":
        return False
    return rows_fit(buffers, rows * next_power_of_2(max(1, int(rnumel))), dev)


def fits_ub(cfg, triton_meta: dict, dev: Device, persistent_rnumel: int | None = None) -> bool:
    """Whether a config (or its kwargs) fits the UB before the body is read: its block within
    ``element_budget`` for the multi-buffer setting it compiles with; a persistent reduction's
    (``persistent_rnumel``) block of more than one row also by ``rows_fit``, a row per pointer
    argument (the pointer budget caps at three pointers, so it let 8 rows of 4096 through for
    a five-pointer RMSNorm, which bishengir needed 590 KB for). One row is what the choice to
    keep rows whole decided (npu's by ``rows_fit`` too; upstream's, e.g. a mix-order
    reduction's, is upstream's): the rows fact does not refuse it."""
    kwargs = getattr(cfg, "kwargs", cfg)
    numel = block_numel(kwargs, persistent_rnumel)
    if numel > element_budget(triton_meta, dev, is_multibuffer(cfg)):
        return False
    return (
        not persistent_rnumel
        or numel <= persistent_rnumel
        or rows_fit(len(_pointers(triton_meta)), numel, dev, is_multibuffer(cfg))
    )


def ub_estimate(
    config_kwargs: dict,
    triton_meta: dict,
    inductor_meta: dict | None = None,
    size_hints: dict | None = None,
    multibuffer: bool = False,
) -> int:
    """The UB bytes of a config before the body is read (the floor of ``block_buffers``, what
    ``element_budget`` caps with); the Ascend check reports it beside the body estimate."""
    rn = persistent_rnumel(size_hints, config_kwargs)
    return ub_model.floor_bytes(
        block_buffers(triton_meta), block_numel(config_kwargs, rn), multibuffer
    )


def reduction_numel(size_hints: dict) -> int:
    """Elements of a whole reduction block: the product of the (power-of-two) reduction axes'
    sizes (``r0_``, and ``r1_`` for a tiled reduction)."""
    r = 1
    for k, v in size_hints.items():
        if k.startswith("r"):
            r *= next_power_of_2(max(1, int(v)))
    return r


def reduction_blocks(size_hints: dict, rblock: int) -> dict:
    """A looped reduction's ``rblock`` elements as one block per reduction axis
    (``R0_BLOCK``, ``R1_BLOCK``...), innermost axis first as upstream unravels them, so that
    a tiled reduction's kernel gets every block it declares."""
    prefixes = sorted((k for k in size_hints if k.startswith("r")), reverse=True) or ["r0_"]
    left, out = max(1, int(rblock)), {}
    for prefix in prefixes:
        size = next_power_of_2(max(1, int(size_hints.get(prefix, 1))))
        out[f"{prefix.upper()}BLOCK"] = b = max(1, min(size, left))
        left = max(1, left // b)
    return dict(sorted(out.items()))


def persistent_rnumel(size_hints: dict | None, kwargs: dict) -> int | None:
    """A persistent reduction holds the whole (power-of-2) reduction in its block."""
    if not size_hints or "R0_BLOCK" in kwargs:
        return None
    r = reduction_numel(size_hints)
    return r if r > 1 else None


def make(kwargs: dict, multibuffer: bool = False) -> Config:
    return Config(dict(kwargs), num_warps=1, num_stages=MULTIBUFFER_STAGES if multibuffer else 1)


make_config = make


def as_npu(cfg: Config) -> Config:
    """An upstream config re-shaped for a vector core: one warp, one stage."""
    return Config(dict(cfg.kwargs), num_warps=1, num_stages=1)


def program_targets(numel: int, dev: Device, exhaustive: bool = False) -> list[int]:
    """Program counts to try, fewest first: one, about half the cores (an eighth under 128K
    elements), all cores; exhaustive tuning adds the quarter and twice the cores."""
    spread = max(1, dev.vector_cores // (8 if numel < 128 * 1024 else 2))
    out = [1, spread, dev.vector_cores]
    if exhaustive:
        out += [max(1, dev.vector_cores // 4), 2 * dev.vector_cores]
    return sorted(set(out), key=out.index)


def min_block(triton_meta: dict) -> int:
    return max(1, ALIGN_BYTES // element_bytes(triton_meta))


def unique(configs) -> list[Config]:
    seen, out = set(), []
    for c in configs:
        key = (tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def _fitting(configs: list, triton_meta: dict, dev: Device, rn: int | None = None) -> list:
    # the budget's floor (32-byte rows) can exceed a tiny UB: then the configs stay, and the
    # body-aware fit_to_ub (or Ascend's compile) has the last word
    return unique([c for c in configs if fits_ub(c, triton_meta, dev, rn)] or configs)


def pointwise(
    size_hints: dict,
    triton_meta: dict,
    dev: Device,
    *,
    exhaustive: bool = False,
    multibuffer: bool = False,
) -> list[Config]:
    """Blocks over x (innermost, 32-byte aligned), then y and z, one candidate per program count."""
    dims = [d for d in ("x", "y", "z") if d in size_hints]
    sizes = {d: next_power_of_2(max(1, int(size_hints[d]))) for d in dims}
    numel = functools.reduce(lambda a, b: a * b, sizes.values(), 1)
    out = []
    for mb in (False, True) if multibuffer else (False,):
        budget = element_budget(triton_meta, dev, mb)
        for programs in program_targets(numel, dev, exhaustive):
            left = min(budget, max(min_block(triton_meta), next_power_of_2(-(-numel // programs))))
            blocks = {}
            for i, d in enumerate(dims):
                # 32-byte aligned rows, even if masked; but a one-element axis gets a block of 1:
                # Inductor drops its mask (numel 1), so every extra lane would repeat the
                # element's store or atomic (index_add into a 0-d tensor added its source XBLOCK times)
                floor = min_block(triton_meta) if i == 0 and sizes[d] > 1 else 1
                blocks[f"{d.upper()}BLOCK"] = b = max(floor, min(sizes[d], left))
                left = max(1, left // b)
            out.append(make(dict(sorted(blocks.items())), mb))
    return _fitting(out, triton_meta, dev)


def tiled_rows(size_hints: dict, room: int) -> dict:
    """A tiled reduction (rows over x and y) needs a YBLOCK too: the y rows that fit next to
    the x block (at least 1)."""
    if "y" not in size_hints:
        return {}
    room = max(1, int(room))
    return {
        "YBLOCK": max(
            1, min(next_power_of_2(max(1, int(size_hints["y"]))), 1 << (room.bit_length() - 1))
        )
    }


def reduction(
    size_hints: dict,
    triton_meta: dict,
    dev: Device,
    persistent: bool = False,
    *,
    exhaustive: bool = False,
    multibuffer: bool = False,
) -> list[Config]:
    """XBLOCK rows per program (split axis), R0_BLOCK of the reduction per sub-block (looped
    reductions only: persistent ones hold the whole row; exhaustive tuning also tries half and
    a quarter of it; a tiled reduction's block spread over its axes by ``reduction_blocks``)."""
    xnumel = next_power_of_2(max(1, int(size_hints.get("x", 1))))
    rnumel = reduction_numel(size_hints)
    pointers = len(_pointers(triton_meta))
    out = []
    for mb in (False, True) if multibuffer else (False,):
        budget = element_budget(triton_meta, dev, mb)
        if persistent:
            rblocks = [None]
        else:
            r0 = min(rnumel, max(min_block(triton_meta), budget // 4), 2048)
            rblocks = [r0] + (
                [r for r in (r0 // 2, r0 // 4) if r >= min_block(triton_meta)] if exhaustive else []
            )
        for rblock in rblocks:
            per_row = rnumel if rblock is None else rblock
            max_x = max(1, min(xnumel, budget // per_row))
            # whole rows: as many as fit by the persistent-row fact (``fits_ub``), at least one
            while rblock is None and max_x > 1 and not rows_fit(pointers, max_x * per_row, dev, mb):
                max_x //= 2
            for programs in program_targets(xnumel, dev, exhaustive):
                xblock = max(1, min(max_x, next_power_of_2(-(-xnumel // programs))))
                kwargs = {"XBLOCK": xblock}
                if rblock is not None:
                    kwargs.update(reduction_blocks(size_hints, rblock))
                kwargs.update(tiled_rows(size_hints, max_x // xblock))
                out.append(make(kwargs, mb))
    return _fitting(out, triton_meta, dev, rnumel if persistent else None)


# ---- cube tiles: GEMM and flex attention ---------------------------------------------------
ACC_BYTES = 4  # fp32 / int32 accumulator


def gemm_epilogue_fits(
    block_m: int, block_n: int, dev: Device, accumulators: int = 1, ub_bytes: int | None = None
) -> bool:
    """Whether the vector epilogue of a GEMM tile fits the UB: each fp32 accumulator of the
    tile and its post-processed copy, priced by the UB model (a value buffer each)."""
    return fits_buffers(
        {"v": {ACC_BYTES: 2 * accumulators}}, block_m * block_n, dev, ub_bytes=ub_bytes
    )


def flex_fits(buffers: list[tuple[int, int]], dev: Device) -> bool:
    """Whether a flex-attention tile's vector buffers ``(itemsize, elements)`` fit the UB, each
    with its post-processed copy, priced by the UB model (value buffers)."""
    tile = max((n for _, n in buffers), default=1)
    counts: dict = {"v": {}}
    for nbytes, n in buffers:
        counts["v"][(nbytes, n)] = counts["v"].get((nbytes, n), 0) + 2
    return fits_buffers(counts, tile, dev)
