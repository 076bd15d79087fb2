"""The feature catalogue (copies of the project's spec/features-*.tsv, shipped as data).

Rows keep their stable ids. ``npu_scope`` is ``required``, ``npu-equivalent: ...`` (required
in its NPU form) or ``n/a: <reason>`` (nothing to test on an NPU).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from importlib import resources

FILES = ("features-config.tsv", "features-infra.tsv", "features-beyond.tsv")

# Which component owns the rows of each group (doctor says what is missing per group and
# where it would come from). Groups not listed belong to npu-lowering's codegen.
OWNERS = {
    "base": "npu-lowering",
    "graph-capture": "npu-lowering",
    "numerics": "npu-lowering",
    "backend-specific": "npu-lowering",
    "codegen-cache": "npu-lowering",
    "fusion": "npu-fusion",
    "template-fusion": "npu-fusion",
    "autotune": "npu-autotune",
    "autotune-cache": "npu-autotune",
    "async-compile": "npu-autotune",
    "gemm-candidates": "npu-autotune",
    "diagnostics": "npu-autotune",
    "precompile": "npu-cache",
    "remote-cache": "npu-cache",
    "cache-policy": "npu-cache",
    "launcher": "npu-launcher",
    "graph-tree": "npu-graphtree",
    "beyond": None,  # each row names its component in inductor_config, e.g. "(npu-cache)"
}


@dataclass(frozen=True)
class Row:
    id: str
    group: str
    feature: str
    inductor_config: str
    npu_scope: str
    meaning: str
    seed_npu_status: str

    @property
    def applicable(self) -> bool:
        return not self.npu_scope.startswith("n/a")

    @property
    def na_reason(self) -> str | None:
        return None if self.applicable else self.npu_scope.partition(":")[2].strip()

    @property
    def owner(self) -> str | None:
        owner = OWNERS.get(self.group, "npu-lowering")
        # beyond rows name their owners in parentheses: "(npu-sim, npu-graphtree)", "(all packages)"
        if owner is None and self.inductor_config.startswith("("):
            owner = self.inductor_config.strip("()")
        return owner


def _read(name: str) -> list[Row]:
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    rows = []
    for rec in csv.DictReader(text.splitlines(), delimiter="\t"):
        rows.append(
            Row(
                id=rec["id"],
                group=rec["group"],
                feature=rec["feature"],
                inductor_config=rec.get("inductor_config") or "",
                npu_scope=rec["npu_scope"],
                # config rows explain in "note", infra/beyond rows in "what 'works' means ..."
                meaning=rec.get("note") or rec.get("what 'works' means for this project") or "",
                seed_npu_status=rec.get("seed_npu_status") or "",
            )
        )
    return rows


def load() -> list[Row]:
    """Every catalogue row, in file order; ids are unique."""
    rows = [row for name in FILES for row in _read(name)]
    seen: set[str] = set()
    for row in rows:
        if row.id in seen:
            raise ValueError(f"duplicate catalogue id {row.id}")
        seen.add(row.id)
    return rows


def ids() -> set[str]:
    return {row.id for row in load()}
