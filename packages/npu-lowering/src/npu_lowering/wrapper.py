"""Python wrapper codegen for npu graphs (upstream's; the device specifics come from
NpuDeviceOpOverrides)."""

from __future__ import annotations

from torch._inductor import config as inductor_config
from torch._inductor.codegen.wrapper import PythonWrapperCodegen

from .direct_launch import DirectLaunchWrapperMixin, direct_launch_flag


class NpuPythonWrapperCodegen(DirectLaunchWrapperMixin, PythonWrapperCodegen):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        # upstream's create() builds the base class; subgraph wrappers stay upstream's
        if is_subgraph:
            return PythonWrapperCodegen.create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures)
        return NpuPythonWrapperCodegen()

    def direct_launch_enabled(self) -> bool:
        # kernels launch through npu-launcher's launch objects only with it installed and the
        # static launcher on; the kernel object decides per kernel (runtime/direct_launch.py)
        from .runtime.autotuner import static_binder

        return (direct_launch_flag() and inductor_config.use_static_triton_launcher
                and static_binder() is not None)

    @classmethod
    def _get_triton_info_kernel_cls(cls):
        # user @triton.jit kernels take their imports and inductor_meta from this class: with
        # npu's, their kernel object is the npu one (npu heuristics, npu_flavour)
        from .kernel import NpuTritonKernel

        return NpuTritonKernel
