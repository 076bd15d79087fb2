"""Loads the C++ device (``npu_sim._C``) that ``pip install`` built (build_device.py).

Nothing is compiled at import. The build record beside the extension (``_C_build.json``)
names the torch it was built against: a different torch release series (the C++ ABI differs)
is refused before the library is loaded, and a missing extension says how to build it. In a
source checkout, C++ sources changed or added since the build give a warning.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

HERE = Path(__file__).parent
INFO = HERE / "_C_build.json"
CSRC = HERE / "csrc"  # present in a source checkout (editable install) only
REBUILD = ("`python packages/npu-sim/build_device.py` in a source checkout (editable install), or "
           "`pip install --no-build-isolation --force-reinstall --no-deps <npu-sim source>`, which "
           "compiles against the installed torch (needs hatchling, setuptools and ninja installed)")


class ExtensionUnavailable(ImportError):
    """npu-sim's C++ device is not built, or was built against another torch."""


def series(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': the torch releases one build serves (what the wheel pins)."""
    return ".".join(version.split("+")[0].split(".")[:2])


def check(built: str, running: str) -> None:
    if series(built) != series(running):
        raise ExtensionUnavailable(
            f"npu-sim's C++ device was built against torch {built}, but this process runs torch "
            f"{running}: rebuild it against this torch with {REBUILD}")


def stale_sources(info: dict, built_at: float) -> list[str]:
    """C++ sources added, removed or edited since the build (empty outside a source checkout)."""
    if not CSRC.is_dir():
        return []
    now = {p.name: p for p in CSRC.glob("*.cpp")}
    changed = sorted(set(now) ^ set(info.get("sources", [])))
    changed += sorted(n for n, p in now.items() if n not in changed and p.stat().st_mtime > built_at)
    changed += sorted(p.name for p in CSRC.glob("*.h") if p.stat().st_mtime > built_at)
    return changed


def load():
    import torch

    if not INFO.is_file():
        raise ExtensionUnavailable(
            f"npu-sim's C++ device is not built (no {INFO.name} in {HERE}): npu-sim builds it when "
            f"pip installs it; build it with {REBUILD}")
    info = json.loads(INFO.read_text(encoding="utf-8"))
    check(info["torch"], torch.__version__)
    stale = stale_sources(info, INFO.stat().st_mtime)
    if stale:
        warnings.warn(f"npu-sim: C++ sources changed since the device was built ({', '.join(stale)}); "
                      f"rebuild with {REBUILD}", stacklevel=3)
    try:
        from . import _C
    except ImportError as e:
        raise ExtensionUnavailable(f"npu-sim's C++ device does not load ({e}); rebuild it with {REBUILD}") from e
    return _C
