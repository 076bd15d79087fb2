"""npu is registered through Inductor's extension points, and only for npu."""

import torch
from torch._inductor.codegen.common import get_device_op_overrides, get_scheduling_for_device

from npu_lowering.kernel import NpuTritonKernel
from npu_lowering.passes import NpuPostGradPass
from npu_lowering.scheduling import NpuScheduling


def test_npu_backend_is_registered_and_cpu_cuda_are_untouched():
    # upstream registers its own backends lazily (first compile): do it here so the test does
    # not depend on an earlier test having compiled something
    from torch._inductor.codegen.common import init_backend_registration

    init_backend_registration()
    assert get_scheduling_for_device("npu") is NpuScheduling
    assert get_scheduling_for_device("cpu").__module__.startswith("torch._inductor")
    assert get_scheduling_for_device("cuda").__module__.startswith("torch._inductor")
    assert "get_raw_stream" in get_device_op_overrides("npu").import_get_raw_stream_as(
        "get_raw_stream"
    )
    assert torch._inductor.utils.is_gpu("npu") and not torch._inductor.utils.is_gpu("cpu")


def test_gemm_templates_are_npu_kernels_only_on_npu():
    # one patch (_compat.npu_template_kernel_class): templates build npu-lowering's kernel class
    # for an npu output and upstream's for any other device; class access is upstream's
    from types import SimpleNamespace

    from torch._inductor.kernel.mm import mm_template
    from torch._inductor.select_algorithm import TritonTemplate, TritonTemplateKernel

    from npu_lowering.template_kernel import NpuTritonTemplateKernel

    assert TritonTemplate.kernel_type is TritonTemplateKernel
    descriptor = TritonTemplate.__dict__["kernel_type"]
    chosen = {
        d: descriptor.class_for(SimpleNamespace(get_device=lambda d=d: torch.device(d)))
        for d in ("cpu", "cuda", "npu")
    }
    assert chosen == {
        "cpu": TritonTemplateKernel,
        "cuda": TritonTemplateKernel,
        "npu": NpuTritonTemplateKernel,
    }
    assert callable(mm_template.kernel_type)  # instances get the factory
    assert (
        "npu_lowering.runtime import heuristics"
        in NpuTritonTemplateKernel.gen_common_triton_imports()
    )
    assert "npu_lowering" not in TritonTemplateKernel.gen_common_triton_imports()


def test_is_big_gpu_answers_from_cube_cores_only_for_npu(monkeypatch):
    from npu_lowering import _compat

    utils = torch._inductor.utils
    assert utils.is_big_gpu(torch.device("npu")) is True  # npu-sim's 910B: 24 cube cores
    monkeypatch.setattr(_compat, "_npu_cube_cores", lambda device: 2)  # a 310-class part
    assert utils.is_big_gpu(torch.device("npu")) is False
    assert utils.is_big_gpu.__wrapped__.__module__ == "torch._inductor.utils"


def test_generated_kernels_import_npu_helpers_not_cuda():
    from npu_lowering.runtime import heuristics, helpers, math

    bound = {}
    exec(NpuTritonKernel.gen_common_triton_imports(), bound)  # what a kernel module binds
    assert bound["triton_heuristics"] is heuristics and bound["triton_helpers"] is helpers
    assert bound["libdevice"] is math.libdevice and bound["tl_math"] is math.math


def test_generated_kernels_do_not_switch_the_triton_driver():
    # upstream's header line calls it at import; npu kernels use the process's backend, so
    # the name resolves to npu's helper (upstream's would pin Triton to its GPU driver)
    from npu_lowering.runtime import helpers
    from torch._inductor.runtime import triton_helpers as upstream

    assert helpers.set_driver_to_gpu is not upstream.set_driver_to_gpu
    assert helpers.set_driver_to_gpu() is None
    code = NpuTritonKernel.gen_common_triton_imports() + "triton_helpers.set_driver_to_gpu()\n"
    exec(code, {})  # the header of a generated kernel runs without switching drivers


def test_cache_key_follows_the_lowering_source():
    uuid = NpuPostGradPass().uuid()
    assert uuid.startswith("npu-lowering-") and len(uuid) > 20


def test_cache_key_follows_the_device_facts(monkeypatch):
    # the UB budget and the core cap are baked into generated kernels: another SoC, another key
    from npu_inductor_core import tiles as tiling

    before = NpuPostGradPass().uuid()
    monkeypatch.setattr(
        tiling, "device", lambda index=0: tiling.Device(ub_bytes=64 * 1024, vector_cores=4)
    )
    assert NpuPostGradPass().uuid() != before
