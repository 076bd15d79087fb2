"""The Ascend check's work report: the cost model's work record next to what Ascend's IR moves.

Per config: GM bytes of one block from the Triton IR, from bishengir's HIVM DMAs (per target)
and from the codegen record (``npu_work``: the kernel's GM bytes over its blocks), and the TTIR's
vector work by element class (``work_ir``). Per run: the distribution of the ratios. A report,
not a check: the record counts each buffer once per launch (upstream's
``estimate_kernel_num_bytes``) where the IR counts every block's loads, so a multi-pass reduction
or an operand re-read by every block (a norm's weight) is above 1 by design. Ratios outside
``SANE`` are named on their own line: a block count or a parse gone wrong, not a kernel.
"""

from __future__ import annotations

import math
import re
import statistics

# TTIR / record outside this range means a figure is wrong: a kernel cannot move less than the
# bytes it must touch once (below 1, with slack for masks padding the record's exact sizes the
# other way), and reads beyond 64x its operands would be a block count off by a factor
SANE = (0.5, 64.0)
# HIVM / TTIR of a vector-only kernel: bishengir moves the blocks Triton asked for (1.0 on most
# kernels of the suite; 0.75 where it drops a load, 1.3 on one 950 kernel). Mix (Cube) kernels
# are reported apart, not held to it: on the 910B the Cube's operands and result pass through a
# GM workspace between the vector and Cube cores (about 3x)
SANE_HIVM = (0.5, 4.0)
_NUMEL = re.compile(r"^\s+([xyz])numel = (\d+)\s*$", re.MULTILINE)


def blocks(kwargs: dict, size_hints: dict, source: str = "") -> int | None:
    """How many blocks a launch covers: per program axis (x, y, z), its size over its BLOCK.
    Sizes are the kernel's own constants where its body states them (a static shape), else its
    size hints (powers of 2); None without program axes (a template)."""
    stated = {a: int(n) for a, n in _NUMEL.findall(source)}
    axes = [a for a in size_hints if not a.startswith("r")]
    if not axes:
        return None
    out = 1
    for a in axes:
        numel = stated.get(a, size_hints[a])
        out *= max(1, math.ceil(int(numel) / int(kwargs.get(f"{a.upper()}BLOCK", 1) or 1)))
    return out


def programs(inductor_meta: dict, n: int | None) -> int | None:
    """How many programs run the ``n`` blocks of a kernel with sub-block loops over one axis
    (runtime/grid.py: at most one per vector core, each a contiguous run of blocks); None for
    other kernels (a program per block) or an unknown core count."""
    meta = inductor_meta or {}
    cores = (meta.get("npu_device_facts") or {}).get("vector_cores")  # device.FACTS_KEY
    if not n or meta.get("npu_grid_axes") != 1 or not isinstance(cores, int) or cores < 1:
        return None
    return math.ceil(n / math.ceil(n / cores))


def record_per_block(inductor_meta: dict, kwargs: dict, size_hints: dict, source: str) -> dict:
    from npu_inductor_core.cost_model import record  # (check.py puts its source on sys.path)

    rec = record(inductor_meta)
    if not rec:
        return {"record": None}
    if "combo_grid_meta" in (inductor_meta or {}):  # its programs are its sub-kernels' blocks
        return {"blocks": None, "record_gm_bytes_per_block": None, "record": dict(rec)}
    n = blocks(kwargs, size_hints, source)
    return {
        "blocks": n,
        "programs": programs(inductor_meta, n),
        "record_gm_bytes_per_block": rec.get("gm_bytes", 0) / n if n else None,
        "record": dict(rec),
    }


def _ratio(a, b) -> float | None:
    return a / b if a and b else None


def _dist(ratios: list[float]) -> dict:
    if not ratios:
        return {"configs": 0}
    return {
        "configs": len(ratios),
        "median": round(statistics.median(ratios), 3),
        "min": round(min(ratios), 3),
        "max": round(max(ratios), 3),
    }


def classes_agree(work: dict) -> bool | None:
    """Whether the TTIR and codegen's record agree that the kernel has special or composite
    element operations (transcendental functions, float division); None for a record without
    element classes."""
    rec = work.get("record") or {}
    if "special_ops" not in rec:
        return None
    v = work.get("ttir_vector") or {}
    ttir = any(v.get(c, {}).get("ops") for c in ("transcendental", "divide"))
    return ttir == bool(rec.get("special_ops") or rec.get("composite_ops"))


def work_agreement(results, targets) -> dict:
    """Ratio distributions over the run's configs: TTIR / record and HIVM / TTIR per target;
    kernels without a record; configs whose ratio is outside the sane range."""
    ttir_rec, odd = [], []
    per_target = {t.name: [] for t in targets}
    mix = {t.name: [] for t in targets}
    no_record = set()
    classes = {}  # kernel -> classes_agree of its first config with a figure
    for r in results:
        for c in r.configs:
            w = getattr(c, "work", None) or {}
            if not w:
                continue
            if w.get("record") is None:
                no_record.add(r.name)
            agree = classes_agree(w)
            if agree is not None:
                classes.setdefault(r.name, agree)
            ttir = w.get("ttir_gm_bytes_per_block")
            q = _ratio(ttir, w.get("record_gm_bytes_per_block"))
            if q is not None:
                ttir_rec.append(q)
                if not SANE[0] <= q <= SANE[1]:
                    odd.append(f"{r.name} cfg{c.index} {c.kwargs}: TTIR / record {q:.3g}")
            cube = (getattr(c, "launch", None) or {}).get("mix_mode") == "mix"
            for t, hivm in (w.get("hivm_dma_bytes_per_block") or {}).items():
                q = _ratio(hivm, ttir)
                if q is not None and t in per_target:
                    (mix if cube else per_target)[t].append(q)
                    if not cube and not SANE_HIVM[0] <= q <= SANE_HIVM[1]:
                        odd.append(f"{r.name} cfg{c.index} {c.kwargs} [{t}]: HIVM / TTIR {q:.3g}")
    return {
        "ttir_over_record": _dist(ttir_rec),
        "hivm_over_ttir": {t: _dist(v) for t, v in per_target.items()},
        "hivm_over_ttir_mix_kernels": {t: _dist(v) for t, v in mix.items()},
        "kernels_without_record": sorted(no_record),
        "element_classes": {
            "kernels": len(classes),
            "agree": sum(classes.values()),
            "disagree": sorted(k for k, v in classes.items() if not v),
        },
        "outside_sane_range": odd,
    }


def summary_line(agreement: dict) -> str:
    d = agreement["ttir_over_record"]
    parts = [
        f"work: TTIR / record GM bytes per block over {d['configs']} configs"
        + (f" median {d['median']}x (min {d['min']}, max {d['max']})" if d["configs"] else "")
    ]
    for t, h in agreement["hivm_over_ttir"].items():
        if h["configs"]:
            parts.append(f"HIVM DMA / TTIR ({t}) median {h['median']}x ({h['min']}-{h['max']})")
    for t, h in agreement.get("hivm_over_ttir_mix_kernels", {}).items():
        if h["configs"]:
            parts.append(f"mix kernels ({t}) {h['min']}-{h['max']}x over {h['configs']}")
    e = agreement.get("element_classes") or {}
    if e.get("kernels"):
        parts.append(
            f"special/composite element ops in TTIR and record alike on {e['agree']}/{e['kernels']} kernels"
        )
    parts.append(f"{len(agreement['kernels_without_record'])} kernels without a record")
    return "; ".join(parts)
