"""A combo kernel's npu meta: the sum of its sub-kernels' work records (the cost model) and
whether one of them indexes indirectly (Ascend's config rules).

Upstream's ``ComboKernel.jit_line`` writes a combo kernel's inductor_meta from the kernel
class's common meta (a classmethod, no view of the sub-kernels) and its own
``combo_grid_meta(size_hints_list)``, a dict of per-sub-kernel facts the launcher reads by key.
That method is the one place per combo kernel that sees the sub-kernels while the meta is
written, so npu's combo kernels answer it with npu's keys: ``npu_work``, the sub-kernels'
records summed (bytes added; statements weighted by each sub-kernel's element count, so the
record's element count is 1), and ``ascend_rules.INDIRECT_KEY`` when a sub-kernel loads through
a computed index (its configs then keep XBLOCK above one row, as a single kernel's do).
``NpuScheduling._build_combo_kernel`` attaches it to each combo kernel it builds (torch 2.14 and
later; 2.13 builds combo kernels inline, without the method, and its combo kernels stay priced
as a bare launch and carry no indirect mark: npu-fusion keeps gathers out of its joins there).
"""

from __future__ import annotations

from collections import Counter

from npu_inductor_core import ascend_rules, cost_model

# counts of a record that scale with its element count
_PER_ELEMENT = ("vector_ops", "special_ops", "composite_ops")


def attach(combo) -> None:
    upstream = combo.combo_grid_meta

    def combo_grid_meta(size_hints_list):
        meta = upstream(size_hints_list)
        work = summed(sub._npu_work() for sub in combo.sub_kernels if hasattr(sub, "_npu_work"))
        if work:
            meta[cost_model.WORK_KEY] = work
        if any(getattr(sub, "_npu_indirect", False) for sub in combo.sub_kernels):
            meta[ascend_rules.INDIRECT_KEY] = True
        return meta

    # an instance attribute, as upstream asks ``self.combo_grid_meta`` for this one kernel
    combo.combo_grid_meta = combo_grid_meta


def summed(records) -> dict:
    """One record for launches of several kernels' work together; {} if any has none."""
    total: Counter = Counter()
    dtypes: Counter = Counter()
    for rec in records:
        if not rec:
            return {}
        numel = int(rec.get("numel", 0))
        total["gm_bytes"] += int(rec.get("gm_bytes", 0))
        for key in _PER_ELEMENT:
            total[key] += int(rec.get(key, 0)) * numel
        for dtype, count in (rec.get("dtype_ops") or {}).items():
            dtypes[dtype] += int(count) * numel
    if not total:
        return {}
    return {**dict(total), "numel": 1, "dtype_ops": dict(sorted(dtypes.items()))}
