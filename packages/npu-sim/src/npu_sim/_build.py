"""Loads the C++ device (``npu_sim._C``) that ``pip install`` built (build_device.py).

Nothing is compiled at import. The build record beside the extension (``_C_build.json``)
names the torch it was built against: a different torch release series (the C++ ABI differs)
is refused before the library is loaded, naming both torch versions and the command that
rebuilds, and a missing extension says how to build it. A wheel has the extension beside this
file; a source checkout (editable install) has one build per torch series under ``_built/``
(build_device.in_place_dir), so venvs of several torch releases share the checkout. In a
source checkout, C++ sources changed or added since the build give a warning.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).parent
INFO = HERE / "_C_build.json"  # a wheel's build record
BUILT = HERE / "_built"  # a source checkout's builds: torch<series>/npu_sim/_C_build.json
CSRC = HERE / "csrc"  # present in a source checkout (editable install) only
REBUILD = (
    "`python packages/npu-sim/build_device.py` in a source checkout (editable install), or "
    "`pip install --no-build-isolation --force-reinstall --no-deps <npu-sim source>`, which "
    "compiles against the installed torch (needs hatchling, setuptools and ninja installed)"
)


class ExtensionUnavailable(ImportError):
    """npu-sim's C++ device is not built, or was built against another torch."""


def series(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': the torch releases one build serves (what the wheel pins)."""
    return ".".join(version.split("+")[0].split(".")[:2])


def check(built: str, running: str) -> None:
    if series(built) != series(running):
        raise ExtensionUnavailable(
            f"npu-sim's C++ device was built against torch {built}, but this process runs torch "
            f"{running}: rebuild it against this torch with {REBUILD}"
        )


def stale_sources(info: dict, built_at: float) -> list[str]:
    """C++ sources added, removed or edited since the build (empty outside a source checkout)."""
    if not CSRC.is_dir():
        return []
    now = {p.name: p for p in CSRC.glob("*.cpp")}
    changed = sorted(set(now) ^ set(info.get("sources", [])))
    changed += sorted(
        n for n, p in now.items() if n not in changed and p.stat().st_mtime > built_at
    )
    changed += sorted(p.name for p in CSRC.glob("*.h") if p.stat().st_mtime > built_at)
    return changed


def _record(running: str) -> Path:
    """The build record to load: the checkout's build for the running torch series, else the
    wheel's, else any checkout build (refused by ``check``, naming its torch)."""
    local = BUILT / f"torch{series(running)}" / "npu_sim" / INFO.name
    if local.is_file() or INFO.is_file():
        return local if local.is_file() else INFO
    others = sorted(BUILT.glob(f"torch*/npu_sim/{INFO.name}"))
    return others[-1] if others else INFO


def load():
    import torch

    record = _record(torch.__version__)
    if not record.is_file():
        raise ExtensionUnavailable(
            f"npu-sim's C++ device is not built (no {INFO.name} in {HERE}): npu-sim builds it when "
            f"pip installs it; build it with {REBUILD}"
        )
    info = json.loads(record.read_text(encoding="utf-8"))
    check(info["torch"], torch.__version__)
    stale = stale_sources(info, record.stat().st_mtime)
    if stale:
        warnings.warn(
            f"npu-sim: C++ sources changed since the device was built ({', '.join(stale)}); "
            f"rebuild with {REBUILD}",
            stacklevel=3,
        )
    try:
        if record == INFO:
            from . import _C
        else:
            _C = _load_from(record.parent)
    except ImportError as e:
        raise ExtensionUnavailable(
            f"npu-sim's C++ device does not load ({e}); rebuild it with {REBUILD}"
        ) from e
    return _C


def _load_from(folder: Path):
    """Import ``npu_sim._C`` from a checkout build's folder (not on the package's path)."""
    name = f"{__package__}._C"
    if name in sys.modules:
        return sys.modules[name]
    paths = [p for s in importlib.machinery.EXTENSION_SUFFIXES for p in folder.glob(f"_C{s}")]
    if not paths:
        raise ImportError(f"no _C extension in {folder}")
    loader = importlib.machinery.ExtensionFileLoader(name, str(paths[0]))
    spec = importlib.util.spec_from_file_location(name, paths[0], loader=loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module
