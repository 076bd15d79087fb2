"""Dynamo's DeviceInterface for "npu" on npu-sim (triton-capable: kernels run in the
interpreter), so Dynamo can trace torch.npu streams/events and Inductor can target npu."""

from __future__ import annotations

from typing import Any

from torch._dynamo.device_interface import DeviceInterface, register_interface_for_device

from . import npu as _npu


class NpuInterface(DeviceInterface):
    device = _npu.device
    Event = _npu.Event
    Stream = _npu.Stream

    class Worker:  # queried from compile workers, which never start the device
        @staticmethod
        def set_device(device: int) -> None:
            _npu.set_device(device)

        @staticmethod
        def current_device() -> int:
            return _npu.current_device()

        @staticmethod
        def get_device_properties(device: Any = None) -> Any:
            return _npu.get_device_properties(device)

    current_device = staticmethod(_npu.current_device)
    set_device = staticmethod(_npu.set_device)
    device_count = staticmethod(_npu.device_count)
    stream = staticmethod(_npu.stream)
    current_stream = staticmethod(_npu.current_stream)
    set_stream = staticmethod(_npu.set_stream)
    synchronize = staticmethod(_npu.synchronize)
    get_device_properties = staticmethod(_npu.get_device_properties)
    memory_allocated = staticmethod(_npu.memory_allocated)

    @staticmethod
    def maybe_exchange_device(device: int) -> int:
        prev = _npu.current_device()
        if device >= 0 and device != prev:
            _npu.set_device(device)
        return prev

    exchange_device = maybe_exchange_device

    @staticmethod
    def _set_stream_by_id(stream_id: int, device_index: int, device_type: int) -> None:
        _npu.set_stream(
            _npu.Stream(stream_id=stream_id, device_index=device_index, device_type=device_type)
        )

    @staticmethod
    def get_raw_stream(device_idx: int) -> int:
        return _npu.current_stream(device_idx).stream_id

    @staticmethod
    def is_available() -> bool:
        return True

    @staticmethod
    def get_compute_capability(device: Any = None) -> str:
        return _npu.get_device_name(device)

    @staticmethod
    def is_bf16_supported(including_emulation: bool = False) -> bool:
        return True

    @staticmethod
    def is_triton_capable(device: Any = None) -> bool:
        return True

    @staticmethod
    def is_gpu() -> bool:
        # torch 2.15 builds Inductor's GPU_TYPES from this (GPU codegen, device guards, streams)
        # for interfaces registered before torch._inductor.utils is imported; earlier torch never
        # asks (npu-lowering's GPU_TYPES patch covers the rest)
        return True

    @staticmethod
    def raise_if_triton_unavailable(device: Any = None) -> None:
        import triton  # noqa: F401  (the interpreter is all npu-sim needs)


def register() -> None:
    register_interface_for_device("npu", NpuInterface)
