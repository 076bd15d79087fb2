"""What the Python wrapper writes for npu device and stream handling."""

from __future__ import annotations

from torch._inductor.codegen.common import DeviceOpOverrides


class NpuDeviceOpOverrides(DeviceOpOverrides):
    def import_get_raw_stream_as(self, name: str) -> str:
        return f"from npu_lowering.runtime.device import get_raw_stream as {name}"

    def set_device(self, device_idx: int) -> str:
        return f"torch.npu.set_device({device_idx})"

    def synchronize(self) -> str:
        return "torch.npu.synchronize()"

    def device_guard(self, device_idx: int) -> str:
        return f"torch.npu.device({device_idx})"

    def current_stream(self) -> str:
        return "torch.npu.current_stream()"
