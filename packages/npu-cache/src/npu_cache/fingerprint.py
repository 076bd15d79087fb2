"""The software fingerprint stored in every entry.

An entry is only valid for the software that wrote it: the same torch build, Triton flavour
and version, and on Ascend the same torch_npu, CANN and SoC. Everything is detected without
importing torch_npu (its import needs CANN, and a cache must not load a device stack): the
torch_npu version comes from package metadata, CANN's from its version files, the SoC from
a ``torch.npu`` that is already loaded.
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

from npu_inductor_core import env_config as _env

CANN_ENV = ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH")
CANN_DEFAULT = Path("/usr/local/Ascend/ascend-toolkit/latest")
_VERSION_RE = re.compile(r"^\s*(?:version|Version)\s*=\s*(\S+)", re.M)

_current: dict | None = None


def _dist_version(*names: str) -> str | None:
    for name in names:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return None


def _cann_home() -> Path | None:
    for var in CANN_ENV:
        where = _env.text(var)
        if where and Path(where).is_dir():
            return Path(where)
    return CANN_DEFAULT if CANN_DEFAULT.is_dir() else None


def _cann_version() -> str | None:
    home = _cann_home()
    if home is None:
        return None
    # CANN writes its version into <home>/version.cfg or <home>/<arch>-linux/ascend_toolkit_install.info
    candidates = [home / "version.cfg", *sorted(home.glob("*/ascend_toolkit_install.info"))]
    for path in candidates:
        try:
            m = _VERSION_RE.search(path.read_text(errors="replace"))
        except OSError:
            continue
        if m:
            return m.group(1)
    # no version file: the resolved directory name (".../ascend-toolkit/8.0.RC2") still tells versions apart
    return home.resolve().name


def _soc() -> str | None:
    torch = sys.modules.get("torch")
    npu = getattr(torch, "npu", None) if torch is not None else None
    if npu is None:
        return None
    try:
        if not npu.is_available() or npu.device_count() < 1:
            return None
        return str(npu.get_device_name(0))
    except Exception:  # a half-initialised device module must not break the cache
        return None


def compute() -> dict:
    """Detect the fingerprint now (tests and the CLI; the cache uses :func:`current`)."""
    import torch  # the cache's own dependency; already imported by any compile

    fp = {
        "python": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "torch": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", None) or "unknown",
    }
    ascend = _dist_version("triton-ascend", "triton_ascend")
    nvidia = _dist_version("triton")
    if ascend:
        fp["triton"] = f"triton-ascend {ascend}"
    elif nvidia:
        fp["triton"] = f"triton {nvidia}"
    optional = {
        "torch_npu": _dist_version("torch_npu", "torch-npu"),
        "cann": _cann_version(),
        "soc": _soc(),
    }
    fp.update({k: v for k, v in optional.items() if v})
    return fp


def current() -> dict:
    """The fingerprint of this process, detected once (the SoC needs the device up: call late)."""
    global _current
    if _current is None:
        _current = compute()
    return dict(_current)


def reset() -> None:
    """Forget the detected fingerprint (after a device module loads, and in tests)."""
    global _current
    _current = None


def canonical(fp: dict) -> bytes:
    """The bytes stored in entries: compact, key-sorted JSON, so equal fingerprints compare equal."""
    return json.dumps(fp, sort_keys=True, separators=(",", ":")).encode("utf-8")
