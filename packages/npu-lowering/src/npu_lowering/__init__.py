"""npu_lowering: Inductor for device "npu" (see this package's README).

``register()`` (component hook, idempotent) registers npu scheduling, wrapper codegen and
device op overrides with Inductor. It leaves cpu and cuda compiles unchanged: every
registration is keyed by the device "npu".
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_registered = False


def register() -> None:
    global _registered
    with _lock:
        if _registered:
            return
        from npu_inductor_core.triton_device import count_npu_as_triton_device
        from torch._inductor import lowering
        from torch._inductor.codegen.common import (
            get_device_op_overrides,
            register_backend_for_device,
            register_device_op_overrides,
        )

        from . import _compat, config, numerics, small_gemm
        from .device_op_overrides import NpuDeviceOpOverrides
        from .template_kernel import NpuTritonTemplateKernel
        from .passes import NpuPostGradPass
        from .scheduling import NpuScheduling
        from .cpp_wrapper import NpuCppWrapperGpu
        from .wrapper import NpuPythonWrapperCodegen

        _compat.add_npu_to_gpu_types()
        count_npu_as_triton_device()  # Scheduler.create_backend's has_triton() (the core's one patch)
        _compat.is_big_gpu_for_npu()
        _compat.npu_template_kernel_class(NpuTritonTemplateKernel)
        # small GEMMs: an entry per op overload in upstream's user_lowerings registry (no patch)
        small_gemm.register_user_lowerings(lowering.user_lowerings)
        # device_custom_config: Inductor puts this module's keys in the FX graph cache key
        # cpp_wrapper=True takes NpuCppWrapperGpu (upstream's flag decides, as for cuda)
        register_backend_for_device(
            "npu",
            NpuScheduling,
            NpuPythonWrapperCodegen,
            NpuCppWrapperGpu,
            device_custom_pass=NpuPostGradPass(),
            device_custom_config=config,
        )
        # torch 2.11's get_device_op_overrides imports upstream's devices' overrides only while
        # the table is empty: registering npu first would leave cuda's cpp wrapper / AOTInductor
        # without its driver. Ask for cpu's first, so upstream fills its own (2.13 uses a flag).
        get_device_op_overrides("cpu")
        register_device_op_overrides("npu", NpuDeviceOpOverrides())
        from . import unlowered_ops

        unlowered_ops.define()  # npu's stand-ins for ATen ops Inductor has no lowering for
        numerics.install_choices()  # upstream's choices for every device but npu under determinism
        from npu_inductor_core.compile_hooks import around_compile_fx, around_compile_graph

        from . import aoti_build

        # AOTInductor on npu: kernels run (and are recorded) at compile time; npu's AOT header
        around_compile_fx("npu-lowering-aoti", aoti_build.compile_context)
        around_compile_graph("npu-lowering-aoti", aoti_build.graph_context)
        from npu_inductor_core import graph_hooks

        from . import saved_rng

        # random values under activation checkpointing: saved, since the partitioner's
        # replay of a device's RNG state knows cuda, cpu, hpu and xpu only
        graph_hooks.joint("npu-lowering", saved_rng.apply, saved_rng.cache_key)
        _registered = True


# the device must exist before Inductor is told about it
register.after = ("npu-sim",)
