"""Tile generator: candidate block configs for npu kernels under the unified buffer (UB)
and the vector-core count.

A program runs on one vector core and keeps one block of every tensor it touches in the UB,
so a config is valid when ``prod(blocks) * element bytes * min(pointer args, 3) <= UB``
(halved with ``multibuffer``: double buffering holds two copies). Candidates vary the
number of programs over the split axes (fewest first: the largest block the UB allows is
the default config), and, when tuning harder, the reduction sub-block. Multibuffer variants
are marked ``num_stages=2``: on Ascend that is the double-buffering switch (see
``autotuner.KernelObjectMixin._create_compile_options``), it keeps the variant distinct in
upstream's config hashing and autotune cache, and the interpreter ignores it.
"""

from __future__ import annotations

import functools
import re

from npu_inductor_core.ascend_rules import (  # noqa: F401 (re-exported)
    INDIRECT_KEY, fit_to_ub, fits_ub_estimate, without_one_row_indirect)
# device facts: the core package's reader, which prefers the facts the lowering recorded in
# the kernel (so a compile worker tiles for the real SoC)
from npu_inductor_core.device import (  # noqa: F401 (re-exported)
    DEFAULT_UB, DEFAULT_VECTOR_CORES, FACTS_KEY, Device, device, device_for)
from torch._inductor.runtime.runtime_utils import next_power_of_2
from triton import Config

ALIGN_BYTES = 32  # innermost blocks cover at least 32 bytes
MULTIBUFFER_STAGES = 2
_DTYPE_BYTES = {"fp64": 8, "i64": 8, "u64": 8, "fp32": 4, "i32": 4, "u32": 4, "fp16": 2, "bf16": 2,
                "i16": 2, "u16": 2, "i8": 1, "u8": 1, "i1": 1, "fp8e4nv": 1, "fp8e5": 1}
# triton-ascend / bishengir: "ub overflow, requires 1703936 bits while 1572864 bits available"
UB_OVERFLOW = re.compile(r"ub overflow.*?requires?\s+(\d+)\s*bits(?:.*?(\d+)\s*bits)?", re.IGNORECASE | re.DOTALL)




def _pointers(triton_meta: dict) -> list[str]:
    return [str(t)[1:] for t in triton_meta.get("signature", {}).values() if str(t).startswith("*")]


def element_bytes(triton_meta: dict) -> int:
    """The widest element among the pointer arguments (the block of each tensor uses it)."""
    return max((_DTYPE_BYTES.get(t, 4) for t in _pointers(triton_meta)), default=4)


def element_budget(triton_meta: dict, dev: Device, multibuffer: bool = False) -> int:
    """Elements of one block that fit the UB next to the blocks of the other tensors."""
    buffers = max(1, min(len(_pointers(triton_meta)), 3)) * (2 if multibuffer else 1)
    n = dev.ub_bytes // buffers // element_bytes(triton_meta)
    return 1 << (max(n, 1).bit_length() - 1)


def block_numel(kwargs: dict, persistent_rnumel: int | None = None) -> int:
    numel = 1
    for k, v in kwargs.items():
        if k.endswith("BLOCK") and isinstance(v, int):
            numel *= v
    return numel * (persistent_rnumel or 1)


def is_multibuffer(cfg: Config) -> bool:
    return getattr(cfg, "num_stages", 1) >= MULTIBUFFER_STAGES


def fits_ub(cfg: Config, triton_meta: dict, dev: Device, persistent_rnumel: int | None = None) -> bool:
    return block_numel(cfg.kwargs, persistent_rnumel) <= element_budget(triton_meta, dev, is_multibuffer(cfg))


def persistent_rnumel(size_hints: dict | None, kwargs: dict) -> int | None:
    """A persistent reduction holds the whole (power-of-2) reduction in its block."""
    if not size_hints or "R0_BLOCK" in kwargs:
        return None
    r = 1
    for k, v in size_hints.items():
        if k.startswith("r"):
            r *= next_power_of_2(max(1, int(v)))
    return r if r > 1 else None


def make(kwargs: dict, multibuffer: bool = False) -> Config:
    return Config(dict(kwargs), num_warps=1, num_stages=MULTIBUFFER_STAGES if multibuffer else 1)


def program_targets(numel: int, dev: Device, exhaustive: bool) -> list[int]:
    """Program counts to try, fewest first: one, about half the cores (an eighth under 128K
    elements), all cores; exhaustive tuning adds the quarter and twice the cores."""
    spread = max(1, dev.vector_cores // (8 if numel < 128 * 1024 else 2))
    out = [1, spread, dev.vector_cores]
    if exhaustive:
        out += [max(1, dev.vector_cores // 4), 2 * dev.vector_cores]
    return sorted(set(out), key=out.index)


def _min_block(triton_meta: dict) -> int:
    return max(1, ALIGN_BYTES // element_bytes(triton_meta))


def pointwise(size_hints: dict, triton_meta: dict, dev: Device, *, exhaustive: bool = False,
              multibuffer: bool = False) -> list[Config]:
    """Blocks over x (innermost, 32-byte aligned), then y and z, one candidate per program count."""
    dims = [d for d in ("x", "y", "z") if d in size_hints]
    sizes = {d: next_power_of_2(max(1, int(size_hints[d]))) for d in dims}
    numel = functools.reduce(lambda a, b: a * b, sizes.values(), 1)
    out = []
    for mb in (False, True) if multibuffer else (False,):
        budget = element_budget(triton_meta, dev, mb)
        for programs in program_targets(numel, dev, exhaustive):
            left = min(budget, max(_min_block(triton_meta), next_power_of_2(-(-numel // programs))))
            blocks = {}
            for i, d in enumerate(dims):
                # a one-element axis has no mask: a block of 1 (npu-lowering's tiling says why)
                floor = _min_block(triton_meta) if i == 0 and sizes[d] > 1 else 1
                blocks[f"{d.upper()}BLOCK"] = b = max(floor, min(sizes[d], left))
                left = max(1, left // b)
            out.append(make(dict(sorted(blocks.items())), mb))
    return unique(c for c in out if fits_ub(c, triton_meta, dev))


def reduction(size_hints: dict, triton_meta: dict, dev: Device, *, persistent: bool, exhaustive: bool = False,
              multibuffer: bool = False) -> list[Config]:
    """XBLOCK rows per program (split axis), R0_BLOCK of the reduction per sub-block (looped
    reductions only; exhaustive tuning also tries half and a quarter of it)."""
    xnumel = next_power_of_2(max(1, int(size_hints.get("x", 1))))
    rnumel = next_power_of_2(max(1, int(size_hints.get("r0_", 1))))
    out = []
    for mb in (False, True) if multibuffer else (False,):
        budget = element_budget(triton_meta, dev, mb)
        if persistent:
            rblocks = [None]
        else:
            r0 = min(rnumel, max(_min_block(triton_meta), budget // 4), 2048)
            rblocks = [r0] + ([r for r in (r0 // 2, r0 // 4) if r >= _min_block(triton_meta)] if exhaustive else [])
        for rblock in rblocks:
            per_row = rnumel if rblock is None else rblock
            max_x = max(1, min(xnumel, budget // per_row))
            for programs in program_targets(xnumel, dev, exhaustive):
                xblock = max(1, min(max_x, next_power_of_2(-(-xnumel // programs))))
                kwargs = {"XBLOCK": xblock} if rblock is None else {"XBLOCK": xblock, "R0_BLOCK": rblock}
                if "y" in size_hints:  # a tiled reduction: y rows next to the x block
                    room = max(1, max_x // xblock)
                    kwargs["YBLOCK"] = min(next_power_of_2(max(1, int(size_hints["y"]))), 1 << (room.bit_length() - 1))
                out.append(make(kwargs, mb))
    rn = rnumel if persistent else None
    return unique(c for c in out if fits_ub(c, triton_meta, dev, rn))


def unique(configs) -> list[Config]:
    seen, out = set(), []
    for c in configs:
        key = (tuple(sorted(c.kwargs.items())), c.num_warps, c.num_stages)
        if key not in seen:
            seen.add(key)
            out.append(c)
    return out


def as_npu(cfg: Config) -> Config:
    """An upstream config re-shaped for a vector core: one warp, one stage."""
    return Config(dict(cfg.kwargs), num_warps=1, num_stages=1)


def _error_texts(exc: BaseException):
    """The exception's message and, for triton-ascend's failed bishengir run (a
    CalledProcessError whose message is only the command), its stderr; then its causes."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        yield str(exc)
        for attr in ("stderr", "output"):
            v = getattr(exc, attr, None)
            if isinstance(v, bytes):
                v = v.decode("utf-8", "replace")
            if isinstance(v, str) and v:
                yield v
        exc = exc.__cause__ or exc.__context__


def ub_overflow(exc: BaseException) -> tuple[int, int | None] | None:
    """(required bits, available bits or None) when a compile error reports a UB overflow."""
    for text in _error_texts(exc):
        m = UB_OVERFLOW.search(text)
        if m:
            return int(m.group(1)), (int(m.group(2)) if m.group(2) else None)
    return None
