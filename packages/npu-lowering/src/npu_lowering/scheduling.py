"""Scheduling for npu: upstream's Triton scheduling with the npu kernel class."""

from __future__ import annotations

from torch._inductor.codegen.triton import TritonScheduling

from .kernel import NpuTritonKernel


class NpuScheduling(TritonScheduling):
    kernel_type = NpuTritonKernel
