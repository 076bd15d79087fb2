"""``import torch`` loads npu-inductor: torch's device-backend autoload (group ``torch.backends``).

torch calls :func:`autoload` at the end of ``import torch`` (skipped with
``TORCH_DEVICE_BACKEND_AUTOLOAD=0``), in an order it does not define among backends, while
``torch`` itself is still initialising. So this does only cheap work there:

- torch_npu, when installed, provides device "npu": its own ``torch.backends`` entry point is
  run first from here (a no-op when torch already ran it), so ours follows it in either
  order; and its per-compile registration of its own Inductor backend for "npu" is switched
  off, so npu compiles take ours. Without torch_npu, npu-sim's entry point starts the device.
- :func:`~npu_inductor.enable` (every component; imports Inductor) waits for the first import
  of ``torch._dynamo``, ``torch._inductor`` or ``torch._inductor.compile_fx`` (every
  ``torch.compile`` makes them), as torch_npu defers its Dynamo setup: a meta-path finder runs
  it right after such a module has executed, unless another ``torch`` module is half-imported
  or our own code (``enable()``, ``npu_sim.start()``, a ``register()``) made the import; a
  later trigger then does. Inductor's compile-worker processes register nothing.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import os
import sys
import threading
import warnings
from importlib import metadata

# modules whose import starts component registration; compile_fx is the last one every
# Inductor compile imports, the backstop if the others finished inside a half-imported torch module
TRIGGERS = ("torch._dynamo", "torch._inductor", "torch._inductor.compile_fx")

# Inductor's compile-worker pool runs this script: it compiles kernels already lowered by the
# parent and never had components registered; registering there would cost ~1 s per pool start
COMPILE_WORKER = os.path.join("torch", "_inductor", "compile_worker", "__main__.py")

_lock = threading.Lock()
state = {"autoloaded": False, "torch_npu": None, "components": None, "error": None}


def _torch_npu_entry_point() -> metadata.EntryPoint | None:
    for ep in metadata.entry_points(group="torch.backends"):
        if ep.value.split(":", 1)[0].split(".", 1)[0] == "torch_npu":
            return ep
    return None


def _start_torch_npu(ep: metadata.EntryPoint) -> None:
    """Run torch_npu's autoload entry point (its import registers device "npu"), then keep
    its own Inductor backend from re-registering for "npu" at each compile."""
    ep.load()()
    state["torch_npu"] = ep.value
    # torch_npu 2.13: torch.compile's wrapper calls register_inductor_npu(), which
    # register_backend_for_device("npu", ...)s torch_npu's Inductor backend over ours
    try:
        dynamo = importlib.import_module("torch_npu.utils._dynamo")
    except ImportError:  # a torch_npu without that lazy registration
        return
    off = getattr(dynamo, "disable_register_inductor_npu", None)
    if off is not None:
        off()


def _busy(name: str) -> bool:
    """Whether registering now could meet a half-defined module or a held lock: a torch module
    other than ``name`` is still executing its import (importlib marks a module's spec
    ``_initializing`` while it does), or our own code imported the trigger (an explicit
    ``enable()``, npu-sim's ``start()``, a component's ``register()``: that code registers what
    it means to, and re-entering it would deadlock on its lock)."""
    for other, module in list(sys.modules.items()):
        if other != name and (other == "torch" or other.startswith("torch.")):
            if getattr(getattr(module, "__spec__", None), "_initializing", False):
                return True
    ours = _our_packages()
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module != __name__ and module.split(".", 1)[0] in ours:
            return True
        frame = frame.f_back
    return False


def _our_packages() -> set[str]:
    from .components import GROUP

    return {"npu_inductor", "npu_inductor_core"} | {
        ep.value.split(":", 1)[0].split(".", 1)[0] for ep in metadata.entry_points(group=GROUP)
    }


def _register_components() -> None:
    from .components import enable

    try:
        state["components"] = enable()
    except Exception as exc:  # noqa: BLE001  (an import must not fail; enable() raises it in full)
        state["error"] = str(exc)
        warnings.warn(
            f"npu-inductor: components not registered at first compile ({exc}); "
            "`npu_inductor.enable()` raises it",
            RuntimeWarning,
            stacklevel=2,
        )


class _Loader(importlib.abc.Loader):
    def __init__(self, loader, finder):
        self.loader, self.finder = loader, finder

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        # the module keeps its own loader (getsource, resources), we only run after it
        module.__loader__ = module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.finder.after(module.__name__)


class _AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``enable()`` after the first trigger module that finishes outside another torch import."""

    def find_spec(self, name, path=None, target=None):
        if name not in TRIGGERS:
            return None
        for finder in list(sys.meta_path):
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, self)
                return spec
        return None

    def after(self, name: str) -> None:
        if _busy(name):
            return  # a later trigger (the outer module's own, or the compile's) runs it
        uninstall()
        _register_components()


def uninstall() -> None:
    sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _AfterImport)]


def autoload() -> None:
    """Entry point of torch's ``torch.backends`` group (``npu_inductor.autoload:autoload``)."""
    with _lock:
        if state["autoloaded"]:
            return
        ep = _torch_npu_entry_point()
        if ep is not None:
            try:
                _start_torch_npu(ep)
            except Exception as exc:  # noqa: BLE001
                # torch_npu without CANN: torch's own call of its entry point fails the import,
                # naming torch_npu rather than us; nothing of ours can work without its device
                state["error"] = (
                    f"torch_npu's entry point {ep.value} failed: {type(exc).__name__}: {exc}"
                )
                return
        state["autoloaded"] = True
        argv = getattr(sys, "argv", None) or [""]  # embedded interpreters may have none
        if os.path.normpath(argv[0]).endswith(COMPILE_WORKER):
            return
        if (
            TRIGGERS[-1] in sys.modules
        ):  # another backend imported Inductor already: no trigger left
            _register_components()
        else:
            sys.meta_path.insert(0, _AfterImport())
