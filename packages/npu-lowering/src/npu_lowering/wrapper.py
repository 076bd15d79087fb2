"""Python wrapper codegen for npu graphs (upstream's; the device specifics come from
NpuDeviceOpOverrides)."""

from __future__ import annotations

from torch._inductor import config as inductor_config
from torch._inductor.codegen.wrapper import PythonWrapperCodegen, SubgraphPythonWrapperCodegen

from .direct_launch import DirectLaunchWrapperMixin, direct_launch_flag


class _AutotuningInputNames:
    def get_autotuning_input_name(self, idx):
        # autotune_with_sample_inputs: the name the sample inputs collected before codegen (npu-autotune, through
        # npu-inductor-core's codegen_hooks) take in the tuning code; upstream defines it only
        # on its cpp GPU wrapper, the only one it collects sample inputs for
        return f"_REAL_AUTOTUNE_INPUT_{idx}"


class NpuSubgraphPythonWrapperCodegen(_AutotuningInputNames, SubgraphPythonWrapperCodegen):
    """Upstream's subgraph (and graph-partition) wrapper; a user kernel inside one is tuned
    on the parent graph's sample inputs by name."""


class NpuPythonWrapperCodegen(
    _AutotuningInputNames, DirectLaunchWrapperMixin, PythonWrapperCodegen
):
    @staticmethod
    def create(is_subgraph, subgraph_name, parent_wrapper, partition_signatures=None):
        # upstream's create() builds the base class; subgraph wrappers are upstream's too
        if is_subgraph:
            assert subgraph_name is not None and parent_wrapper is not None
            return NpuSubgraphPythonWrapperCodegen(
                subgraph_name, parent_wrapper, partition_signatures
            )
        from npu_inductor_core.codegen_hooks import run_before_wrapper_codegen
        from torch._inductor.virtualized import V

        wrapper = NpuPythonWrapperCodegen()
        run_before_wrapper_codegen(
            V.graph
        )  # before any kernel call is generated (autotune_with_sample_inputs' sample inputs)
        return wrapper

    def write_header(self) -> None:
        super().write_header()
        # npu graphs compile and wait for their kernels through the core package's
        # AsyncCompile subclass (components hook compile waits there, no upstream patch)
        self.header.writeline("from npu_inductor_core.async_compile import NpuAsyncCompile")
        self.header.writeline("async_compile = NpuAsyncCompile()")

    def direct_launch_enabled(self) -> bool:
        # kernels launch through npu-launcher's launch objects only with it installed and the
        # static launcher on; the kernel object decides per kernel (runtime/direct_launch.py)
        from .runtime.autotuner import static_binder

        return (
            direct_launch_flag()
            and inductor_config.use_static_triton_launcher
            and static_binder() is not None
        )

    @classmethod
    def _get_triton_info_kernel_cls(cls):
        # user @triton.jit kernels take their imports and inductor_meta from this class: with
        # npu's, their kernel object is the npu one (npu heuristics, npu_flavour)
        from .kernel import NpuTritonKernel

        return NpuTritonKernel
