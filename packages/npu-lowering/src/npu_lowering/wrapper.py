"""Python wrapper codegen for npu graphs (upstream's; the device specifics come from
NpuDeviceOpOverrides)."""

from __future__ import annotations

from torch._inductor.codegen.wrapper import PythonWrapperCodegen


class NpuPythonWrapperCodegen(PythonWrapperCodegen):
    pass
