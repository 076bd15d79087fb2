"""npu-sim: device "npu" on the CPU, for every machine without an Ascend NPU.

``start()`` (also the component ``register()``) loads the C++ device, renames PrivateUse1 to
"npu", installs ``torch.npu``, the process group backend "hccl" (``distributed``) and Dynamo's
device interface. It refuses to start when
torch_npu is installed or PrivateUse1 already belongs to another backend.

``autoload()`` is torch's device-backend entry point (group ``torch.backends``, run at the end
of ``import torch`` unless ``TORCH_DEVICE_BACKEND_AUTOLOAD=0``): it starts the device without
Dynamo's interface, whose import (``torch._dynamo``, ~1 s) waits for the first ``start()``
after it, i.e. npu-inductor's component registration at the first compile.
"""

from __future__ import annotations

import importlib.util
import threading
import warnings

from . import soc

_lock = threading.Lock()
_started = False  # device up: extension, PrivateUse1 named "npu", torch.npu
_dynamo_registered = False


class SimUnavailable(RuntimeError):
    """npu-sim cannot provide device "npu" in this process."""


def _refuse_if_taken() -> None:
    import torch

    if importlib.util.find_spec("torch_npu") is not None:
        raise SimUnavailable(
            "npu-sim refuses to start: torch_npu is installed, so device 'npu' is the real Ascend "
            "device. Uninstall npu-sim or use torch_npu."
        )
    name = torch._C._get_privateuse1_backend_name()
    if name != "privateuseone":
        raise SimUnavailable(
            f"npu-sim refuses to start: the PrivateUse1 backend is already registered as {name!r} "
            "by another package in this process."
        )


def _start_device() -> None:
    global _started
    if _started:
        return
    _refuse_if_taken()
    import torch

    from . import _build, _runtime

    count = soc.device_count()
    soc.selected()  # a bad $NPU_SIM_SOC fails here, before anything is registered
    module = _build.load()
    module._init(count)
    from . import fallback_dtypes

    fallback_dtypes.install(module)  # dtypes the CPU kernels lack that accelerators take
    _runtime._C = module
    from . import capture_rules

    capture_rules.install(module)  # the capturable set, for the capture rules
    torch.utils.rename_privateuse1_backend("npu")
    from . import npu as npu_module

    torch._register_device_module("npu", npu_module)
    torch.utils.generate_methods_for_privateuse1_backend(
        for_tensor=True, for_module=True, for_storage=True, for_packed_sequence=True
    )
    _started = True
    from . import distributed

    distributed.register()  # process group "hccl" for device "npu" (torch_npu's name), over gloo


def start() -> None:
    """Bring up device "npu" and its Dynamo device interface (idempotent)."""
    global _dynamo_registered
    import torch  # noqa: F401  (first: `import torch` runs autoload(), which must not wait on our lock)

    with _lock:
        _start_device()
        if not _dynamo_registered:
            from . import dynamo_interface

            dynamo_interface.register()
            _dynamo_registered = True


def autoload() -> None:
    """Entry point of torch's ``torch.backends`` group: device "npu" at ``import torch``.

    Runs while torch is still importing, so it imports no Dynamo/Inductor. Never fails the
    import: where torch_npu is installed it provides "npu" and this does nothing; any other
    reason not to start is a warning, and ``start()`` raises it in full."""
    if importlib.util.find_spec("torch_npu") is not None:
        return
    if not _lock.acquire(blocking=False):
        return  # a start() holds it and brings the device up itself
    try:
        _start_device()
    except Exception as exc:  # noqa: BLE001  (a broken sim must not break `import torch`)
        warnings.warn(
            f"npu-sim did not start device 'npu' at `import torch`: {type(exc).__name__}: {exc}",
            RuntimeWarning,
            stacklevel=2,
        )
    finally:
        _lock.release()


def is_started() -> bool:
    return _started


register = start
register.provides_device = "npu"  # npu-inductor's enable() skips it where torch_npu provides "npu"
