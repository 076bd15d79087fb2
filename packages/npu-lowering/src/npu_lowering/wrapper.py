"""Python wrapper codegen for npu graphs (upstream's; the device specifics come from
NpuDeviceOpOverrides)."""

from __future__ import annotations

from torch._inductor.codegen.wrapper import PythonWrapperCodegen


class NpuPythonWrapperCodegen(PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        # upstream's create() builds the base class; subgraph wrappers stay upstream's
        if is_subgraph:
            return PythonWrapperCodegen.create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures)
        return NpuPythonWrapperCodegen()

    @classmethod
    def _get_triton_info_kernel_cls(cls):
        # user @triton.jit kernels take their imports and inductor_meta from this class: with
        # npu's, their kernel object is the npu one (npu heuristics, npu_flavour)
        from .kernel import NpuTritonKernel

        return NpuTritonKernel
