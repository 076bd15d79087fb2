"""npu is registered through Inductor's extension points, and only for npu."""

import pytest
import torch
from torch._inductor.codegen.common import get_device_op_overrides, get_scheduling_for_device

from npu_lowering.kernel import NpuTritonKernel
from npu_lowering.passes import NpuPostGradPass, UnsupportedDtype
from npu_lowering.scheduling import NpuScheduling


def test_npu_backend_is_registered_and_cpu_cuda_are_untouched():
    # upstream registers its own backends lazily (first compile): do it here so the test does
    # not depend on an earlier test having compiled something
    from torch._inductor.codegen.common import init_backend_registration

    init_backend_registration()
    assert get_scheduling_for_device("npu") is NpuScheduling
    assert get_scheduling_for_device("cpu").__module__.startswith("torch._inductor")
    assert get_scheduling_for_device("cuda").__module__.startswith("torch._inductor")
    assert "get_raw_stream" in get_device_op_overrides("npu").import_get_raw_stream_as("get_raw_stream")
    assert torch._inductor.utils.is_gpu("npu") and not torch._inductor.utils.is_gpu("cpu")


def test_generated_kernels_import_npu_helpers_not_cuda():
    imports = NpuTritonKernel.gen_common_triton_imports()
    assert "npu_lowering.runtime.math import libdevice" in imports
    assert "npu_lowering.runtime import heuristics as triton_heuristics" in imports
    assert "triton_helpers import libdevice" not in imports


def test_unsupported_dtype_names_the_op_and_dtype():
    x = torch.ones(4, device="npu", dtype=torch.float64)
    torch._dynamo.reset()
    with pytest.raises(Exception, match=r"aten\.mul\.Tensor produces torch\.float64 on npu") as info:
        torch.compile(lambda a: a * 2)(x)
    assert isinstance(info.value, UnsupportedDtype) or "UnsupportedDtype" in str(info.value)


def test_cache_key_follows_the_lowering_source():
    uuid = NpuPostGradPass().uuid()
    assert uuid.startswith("npu-lowering-") and len(uuid) > 20


def test_cache_key_follows_the_device_facts(monkeypatch):
    # the UB budget and the core cap are baked into generated kernels: another SoC, another key
    from npu_lowering.runtime import tiling

    before = NpuPostGradPass().uuid()
    monkeypatch.setattr(tiling, "device", lambda index=0: tiling.Device(ub_bytes=64 * 1024, vector_cores=4))
    assert NpuPostGradPass().uuid() != before
