"""npu-sim: device "npu" on the CPU, for every machine without an Ascend NPU.

``start()`` (also the component ``register()``) builds/loads the C++ device, renames
PrivateUse1 to "npu", installs ``torch.npu`` and Dynamo's device interface. It refuses to
start when torch_npu is installed or PrivateUse1 already belongs to another backend.
"""

from __future__ import annotations

import importlib.util
import threading

from . import soc

_lock = threading.Lock()
_started = False


class SimUnavailable(RuntimeError):
    """npu-sim cannot provide device "npu" in this process."""


def _refuse_if_taken() -> None:
    import torch

    if importlib.util.find_spec("torch_npu") is not None:
        raise SimUnavailable(
            "npu-sim refuses to start: torch_npu is installed, so device 'npu' is the real Ascend "
            "device. Uninstall npu-sim or use torch_npu.")
    name = torch._C._get_privateuse1_backend_name()
    if name != "privateuseone":
        raise SimUnavailable(
            f"npu-sim refuses to start: the PrivateUse1 backend is already registered as {name!r} "
            "by another package in this process.")


def start() -> None:
    """Bring up device "npu" (idempotent)."""
    global _started
    with _lock:
        if _started:
            return
        _refuse_if_taken()
        import torch

        from . import _build, _runtime

        count = soc.device_count()
        soc.selected()  # a bad $NPU_SIM_SOC fails here, before anything is registered
        module = _build.load()
        module._init(count)
        _runtime._C = module
        torch.utils.rename_privateuse1_backend("npu")
        from . import npu as npu_module

        torch._register_device_module("npu", npu_module)
        torch.utils.generate_methods_for_privateuse1_backend(for_tensor=True, for_module=True, for_storage=True,
                                                             for_packed_sequence=True)
        from . import dynamo_interface

        dynamo_interface.register()
        _started = True


def is_started() -> bool:
    return _started


register = start
