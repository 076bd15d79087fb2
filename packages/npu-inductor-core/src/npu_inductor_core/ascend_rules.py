"""Facts of Ascend's compiler that every config generator obeys (npu-lowering's heuristics
and npu-autotune's tile generator both filter their configs through these)."""

from __future__ import annotations

import re

from .kernel_objects import kernel_fact

# inductor_meta: the kernel indexes a tensor with loaded values (gather, embedding, scatter);
# npu-lowering's codegen sets it (a combo kernel's: in its combo_grid_meta, torch 2.14+)
INDIRECT_KEY = "npu_indirect_indexing"


def indirect(inductor_meta: dict | None) -> bool:
    """Whether the kernel (or a sub-kernel of a combo kernel) loads through a computed index."""
    return bool(kernel_fact(inductor_meta, INDIRECT_KEY))


def without_one_row_indirect(configs: list, size_hints: dict, inductor_meta: dict | None) -> list:
    """triton-ascend 3.2.0's triton-adapter-opt aborts on an indirect load in a kernel whose x
    block is one row (PtrAnalysis: ``!(lBlock.hasSource() && rBlock.hasSource())``; BERT's
    and OPT's embeddings + layer norm at XBLOCK=1, other blocks lower; a row gathered by
    ``table[ids]``, whose index is wrapped for negative values by a ``tl.where`` on a
    one-element tile: "invalid index for value range", "cast<Ty>() argument of incompatible
    type"): such kernels drop XBLOCK=1 configs where the x axis has more than one row and
    another config is left (npu-lowering keeps the row of a kernel gathering with a wrapped
    index whole only where two rows fit, so one is)."""
    if not indirect(inductor_meta) or int(size_hints.get("x", 1)) <= 1:
        return configs
    return [c for c in configs if c.kwargs.get("XBLOCK") != 1] or configs


# the order in which a config's blocks give way when it does not fit the UB: the outer axes
# first, the innermost (contiguous) one last, so that DMA rows stay long; in a reduction the
# reduction block is innermost and gives way last, which also keeps the order of its sums
# independent of how many rows a program takes (deterministic mode: the same bits whatever
# the core count)
_SHRINK_ORDER = ("ZBLOCK", "YBLOCK", "XBLOCK", "R1_BLOCK", "R0_BLOCK")


def soc_family(soc: str | None) -> str:
    """The ub_model calibration a SoC uses: the 950 family or the 910B-class parts."""
    return "950" if soc and ("950" in soc or "910_95" in soc) else "910B"


def _facts(triton_meta: dict, inductor_meta: dict | None, filename: str | None):
    from . import device as device_facts
    from . import ub_model

    meta = inductor_meta or {}
    prof = ub_model.profile_for(meta, filename, triton_meta.get("signature", {}))
    dev = device_facts.device_for(meta, device_facts.index_of(triton_meta))
    return prof, dev, soc_family(dev.soc)


def fits_ub_estimate(
    kwargs: dict,
    multibuffer: bool,
    triton_meta: dict,
    inductor_meta: dict | None,
    filename: str | None,
) -> bool:
    """Whether a config's blocks fit the device's UB by the kernel's body-aware estimate
    (True when the kernel's source cannot be read: nothing to say against it)."""
    from . import ub_model

    prof, dev, family = _facts(triton_meta, inductor_meta, filename)
    return prof is None or ub_model.fits(prof, kwargs, multibuffer, family, dev.ub_bytes)


def _persistent(size_hints: dict, kwargs: dict) -> bool:
    """A persistent reduction's config: the kernel reduces (an ``r`` size hint) and its block
    holds whole rows (no reduction block)."""
    return any(str(k).startswith("r") for k in size_hints or ()) and not any(
        str(k).startswith("R") and str(k).endswith("_BLOCK") for k in kwargs
    )


def fit_to_ub(
    configs: list,
    size_hints: dict,
    triton_meta: dict,
    inductor_meta: dict | None,
    filename: str | None,
) -> list:
    """Every config shrunk (its outermost block above 1 halved, repeatedly) until it fits the
    device's UB by the kernel's body (``ub_model.fits``: the peak estimate, and the shared-plan
    margin where the buffers apart overflow) with the multi-buffer setting it compiles with. A config that cannot
    fit even with its smallest blocks is kept as it is (Ascend's compile then drops it,
    ub_fit.py), except a persistent reduction's, which keeps its smallest blocks (one row):
    its whole row was admitted by the tile generator's row fact (``tiles.fits_ub``), and a
    larger block of rows only needs more (an RMSNorm row of 4096 that bishengir plans at 131,776 B
    estimated at 293,790 B: all its configs kept as they were let 8 rows through, 590 KB).
    An indirect-load kernel's x block stays above one row (the rule above).
    Kernels whose source cannot be read keep their configs."""
    from . import ub_model

    meta = inductor_meta or {}
    prof, dev, family = _facts(triton_meta, meta, filename)
    if prof is None:
        return configs
    floor = {"XBLOCK": 2} if indirect(meta) and int(size_hints.get("x", 1)) > 1 else {}
    out, seen = [], set()
    for cfg in configs:
        multibuffer = (getattr(cfg, "num_stages", 1) or 1) >= 2
        kwargs = dict(cfg.kwargs)
        while not ub_model.fits(prof, kwargs, multibuffer, family, dev.ub_bytes):
            blocks = [
                k
                for k in _SHRINK_ORDER
                if isinstance(kwargs.get(k), int) and kwargs[k] > max(1, floor.get(k, 1))
            ]
            if not blocks:
                if not _persistent(size_hints, kwargs):
                    kwargs = dict(cfg.kwargs)
                break
            kwargs[blocks[0]] //= 2
        key = (tuple(sorted(kwargs.items())), cfg.num_warps, cfg.num_stages)
        if key in seen:
            continue
        seen.add(key)
        out.append(
            cfg
            if kwargs == cfg.kwargs
            else type(cfg)(kwargs, num_warps=cfg.num_warps, num_stages=cfg.num_stages)
        )
    return out


# triton-ascend / bishengir: "ub overflow, requires 1703936 bits while 1572864 bits available"
UB_OVERFLOW = re.compile(
    r"ub overflow.*?requires?\s+(\d+)\s*bits(?:.*?(\d+)\s*bits)?", re.IGNORECASE | re.DOTALL
)


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
