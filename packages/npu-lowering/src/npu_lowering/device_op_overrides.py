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

    # What the C++ wrapper (cpp_wrapper.py) writes; the names are defined in
    # include/npu_cpp_wrapper.h. Kernel handles and streams are opaque pointers of
    # npu-launcher's C ABI; tensor arguments are passed as AtenTensorHandle.
    def kernel_header(self) -> str:
        return ""

    def kernel_driver(self) -> str:
        return ""  # loadKernel / launchKernel live in the header, so it can be precompiled

    def cpp_device_guard(self) -> str:
        return "NpuDeviceGuard"

    def cpp_aoti_device_guard(self) -> str:
        return "NpuDeviceGuard"

    def cpp_aoti_stream_guard(self) -> str:
        return "NpuStreamGuard"  # AOTInductor: include/npu_aoti.h

    def cpp_stream_type(self) -> str:
        return "void*"

    def aoti_get_stream(self) -> str:
        return "npu_get_current_stream"

    def cpp_kernel_type(self) -> str:
        return "void*"

    def cpp_device_ptr(self) -> str:
        return "AtenTensorHandle"
