"""``npu-inductor doctor --patches``: what npu-inductor replaced in torch and Triton.

For the running torch: after ``enable()``, every active record of npu-inductor-core's patch
registry (symbol, owner, versions, reason, the upstream hook that would remove it); the patches
declared in the components' ``_compat.py`` that this torch needs but this process has not
installed (installed at first use, or only by a benchmark); and those this torch does not need
(written for another torch release: the upstream hook that replaces each there). A user
debugging a surprise sees what we changed, and a new torch release what it made unnecessary.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util

from npu_inductor_core import patches, torch_versions

from . import components
from .table import render

CORE = "npu_inductor_core"


def _compat_modules() -> list[str]:
    """The core's and each installed component's ``_compat`` module: where every patch lives."""
    tops = {c.target.split(":")[0].split(".")[0] for c in components.discover()}
    names = [f"{top}._compat" for top in [CORE, *sorted(tops)]]
    return [n for n in names if importlib.util.find_spec(n) is not None]


def run() -> tuple[int, dict, str]:
    data: dict = {"status": "ok", "detail": ""}
    try:
        data["registered"] = components.enable()
    except components.ComponentError as exc:
        data.update(registered=[], status="error", detail=str(exc))
    for name in _compat_modules():  # their installers declare what they would patch
        importlib.import_module(name)
    active = patches.active()
    installed = {p.installer for p in active}
    data["count"] = len(active)
    data["active"] = [dataclasses.asdict(p) for p in active]
    series = torch_versions.series()
    import torch

    data["torch"] = torch.__version__
    rest = [p for p in patches.declared() if p.installer not in installed]
    data["not_installed"] = [dataclasses.asdict(p) for p in rest if p.needed_on(series)]
    data["not_needed"] = [dataclasses.asdict(p) for p in rest if not p.needed_on(series)]
    # an active patch this torch does not need is a bug of its installer's version switch
    data["needless_active"] = [p.installer for p in active if not p.needed_on(series)]
    if data["needless_active"] and data["status"] == "ok":
        data.update(
            status="error",
            detail=f"installed though torch {series} does not need them: "
            + ", ".join(sorted(set(data["needless_active"]))),
        )
    return (1 if data["status"] == "error" else 0), data, _text(data)


def _text(d: dict) -> str:
    lines = [f"[error] {d['detail']}", ""] if d["detail"] else []
    lines.append(
        f"torch {d['torch']}: upstream symbols replaced in this process, after enable() ({d['count']}):"
    )
    lines += render(
        ("symbol", "owner", "versions", "reason; removed by"),
        [
            (
                p["symbol"],
                p["owner"],
                p["versions"],
                f"{p['reason']} Removed by: {p['removed_by']}.",
            )
            for p in d["active"]
        ],
    )
    if d["not_installed"]:
        lines += [
            "",
            f"needed on this torch, not installed in this process yet (at first use, or by a "
            f"benchmark) ({len(d['not_installed'])}):",
        ]
        lines += render(
            ("symbol", "owner", "versions", "installer"),
            [(p["symbol"], p["owner"], p["versions"], p["installer"]) for p in d["not_installed"]],
        )
    if d["not_needed"]:
        lines += [
            "",
            f"not needed on torch {d['torch']} (written for other torch releases; the upstream "
            f"hook used instead) ({len(d['not_needed'])}):",
        ]
        lines += render(
            ("symbol", "owner", "needed on torch", "instead"),
            [
                (p["symbol"], p["owner"], ", ".join(p["torch"]), p["removed_by"])
                for p in d["not_needed"]
            ],
        )
    lines += ["", f"{d['count']} active patches"]
    return "\n".join(lines)
