"""``npu-inductor doctor --patches``: what npu-inductor replaced in torch and Triton.

After ``enable()``, every active record of npu-inductor-core's patch registry (symbol, owner,
versions, reason, the upstream hook that would remove it), and the patches declared in the
components' ``_compat.py`` that this process has not installed (installed at first use, only
on another torch, or only by a benchmark). A user debugging a surprise sees what we changed.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util

from npu_inductor_core import patches

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
    data["not_installed"] = [dataclasses.asdict(p) for p in patches.declared() if p.installer not in installed]
    return (1 if data["status"] == "error" else 0), data, _text(data)


def _text(d: dict) -> str:
    lines = [f"[error] {d['detail']}", ""] if d["detail"] else []
    lines.append(f"upstream symbols replaced in this process, after enable() ({d['count']}):")
    lines += render(("symbol", "owner", "versions", "reason; removed by"),
                    [(p["symbol"], p["owner"], p["versions"], f"{p['reason']} Removed by: {p['removed_by']}.")
                     for p in d["active"]])
    if d["not_installed"]:
        lines += ["", f"declared, not installed in this process (at first use, for another torch, or by a "
                      f"benchmark) ({len(d['not_installed'])}):"]
        lines += render(("symbol", "owner", "versions", "installer"),
                        [(p["symbol"], p["owner"], p["versions"], p["installer"]) for p in d["not_installed"]])
    lines += ["", f"{d['count']} active patches"]
    return "\n".join(lines)
