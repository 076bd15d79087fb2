"""Devices: count, current device, properties, synchronize."""

from __future__ import annotations

from typing import Any

import torch

from .. import soc
from .._runtime import ext


def _index(device: Any = None, optional: bool = True) -> int:
    """A device index from an int, str, torch.device or None (the current device)."""
    if device is None:
        return ext()._current_device()
    if isinstance(device, int):
        return device
    if isinstance(device, str):
        device = torch.device(device)
    if isinstance(device, torch.device):
        if device.type != "npu":
            raise ValueError(f"expected an npu device, got {device}")
        return ext()._current_device() if device.index is None else device.index
    raise TypeError(f"invalid device: {device!r}")


def is_available() -> bool:
    return True


def is_initialized() -> bool:
    return True


def init() -> None:
    pass


def device_count() -> int:
    return ext()._device_count()


def current_device() -> int:
    return ext()._current_device()


def set_device(device: Any) -> None:
    idx = _index(device)
    if idx >= 0:
        ext()._set_device(idx)


class device:
    """Context manager that changes the current device."""

    def __init__(self, device: Any):
        self.idx = -1 if device is None else _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = current_device()
        if self.idx >= 0 and self.idx != self.prev:
            ext()._set_device(self.idx)

    def __exit__(self, *exc):
        if self.idx >= 0 and self.idx != self.prev:
            ext()._set_device(self.prev)
        return False


def device_of(obj) -> device:
    return device(obj.get_device() if getattr(obj, "is_npu", False) else None)


def synchronize(device: Any = None) -> None:
    """Work runs synchronously; during capture a sync is an error, as on a device."""
    ext()._check_not_capturing("torch.npu.synchronize()", "aclrtSynchronizeDevice")
    _index(device)


def get_device_properties(device_name: Any = None) -> soc.NPUDeviceProperties:
    idx = _index(device_name)
    if not 0 <= idx < device_count():
        raise AssertionError(f"Invalid device id {idx}")
    return soc.NPUDeviceProperties(soc.selected())


def get_device_name(device_name: Any = None) -> str:
    return get_device_properties(device_name).name


def get_device_capability(device: Any = None) -> tuple[int, int]:
    return (0, 0)  # Ascend parts report no CUDA-style capability


def get_soc_version() -> int:
    return soc.selected().soc_version


def can_device_access_peer(device: Any, peer: Any) -> bool:
    return 0 <= _index(device) < device_count() and 0 <= _index(peer) < device_count()
