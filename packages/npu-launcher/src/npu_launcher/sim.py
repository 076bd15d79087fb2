"""The sim driver's Python side: npu-sim's launch entry point and the kernel function
rebuilt from a descriptor's source.

npu-sim declares ``[project.entry-points."npu_inductor.sim_launch"] launch = ...`` whose
object is ``launch(fn, grid, args, constexprs)``: it runs the Triton JITFunction ``fn`` in
Triton's interpreter on npu-sim tensors (recording it during graph capture). npu-launcher
never imports npu_sim; it finds that entry point here.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import sys
from importlib import metadata
from pathlib import Path

from .descriptor import KernelDescriptor
from .errors import DescriptorError, DriverUnavailable

GROUP = "npu_inductor.sim_launch"
NAME = "launch"
_modules: dict[str, object] = {}


def _entry_points():
    return metadata.entry_points(group=GROUP)


def launch_entry():
    """npu-sim's launch function, or DriverUnavailable."""
    eps = [ep for ep in _entry_points() if ep.name == NAME]
    if not eps:
        raise DriverUnavailable(
            f"npu_launcher: sim driver unavailable: no entry point {NAME!r} in "
            f"group {GROUP!r} (install npu-sim)"
        )
    try:
        return eps[0].load()
    except Exception as e:  # a broken npu-sim install: say which entry point
        raise DriverUnavailable(
            f"npu_launcher: sim driver unavailable: {eps[0].value} failed to load: {e!r}"
        ) from e


def cache_dir() -> Path:
    from . import config  # read now: config.patch(cache_dir=...) applies to the next kernel

    root = config.cache_dir or Path.home() / ".cache" / "npu_launcher"
    return Path(root) / "sim"


def kernel_function(desc: KernelDescriptor):
    """The descriptor's kernel as a Triton JITFunction, rebuilt from its source (a file in the
    cache directory, because Triton reads kernel source through inspect)."""
    if desc.binary_format != "triton-python":
        raise DescriptorError(
            f"kernel {desc.name!r}: the sim driver runs 'triton-python' "
            f"descriptors, not {desc.binary_format!r}"
        )
    digest = hashlib.sha256(desc.binary).hexdigest()[:24]
    mod = _modules.get(digest)
    if mod is None:
        path = cache_dir() / f"k_{digest}.py"
        if not path.exists() or path.read_bytes() != desc.binary:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_bytes(desc.binary)
            os.replace(tmp, path)
        name = f"npu_launcher_sim_{digest}"
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod  # Triton resolves a kernel's globals through its module
        spec.loader.exec_module(mod)
        _modules[digest] = mod
    fn = getattr(mod, desc.name, None)
    if fn is None:
        raise DescriptorError(f"kernel {desc.name!r}: not defined by the descriptor's source")
    return fn
