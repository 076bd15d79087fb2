"""Scheduling for npu: upstream's Triton scheduling with the npu kernel class."""

from __future__ import annotations

from torch._inductor.codegen.triton import TritonScheduling
from torch._inductor.select_algorithm import TritonTemplateKernel

from .kernel import NpuTritonKernel, save_kernel


class NpuScheduling(TritonScheduling):
    kernel_type = NpuTritonKernel

    def define_kernel(self, src_code, node_schedule, kernel):
        # NpuTritonKernel saves its own source; a GEMM template kernel (upstream's class,
        # with npu imports) is saved here, with its fused epilogue, for the Ascend check
        if isinstance(kernel, TritonTemplateKernel):
            save_kernel(src_code)
        return super().define_kernel(src_code, node_schedule, kernel)
