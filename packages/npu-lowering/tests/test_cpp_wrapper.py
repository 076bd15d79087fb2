"""cpp_wrapper=True on npu (L06), with upstream's cpp_wrapper_build_separate (L07) and
cpp_cache_precompile_headers (C01). One C++ compile is shared by the tests (C++ compiles are
slow): a graph with a pointwise op, a reduction, a view, an mm and a fallback ATen op
(aten.sort), its batch dimension dynamic, run at two batch sizes."""

from __future__ import annotations

import os
import re

import pytest
import torch
from torch._inductor import codecache
from torch._inductor import config as inductor_config
from torch._inductor.utils import run_and_get_code

from npu_lowering import _compat
from npu_lowering.runtime.autotuner import LAUNCHES  # kernel runs through the Python kernel object

needs_lazy_compile = pytest.mark.skipif(
    not _compat.lazy_triton_compile_available(),
    reason="this torch (2.11) has no torch._inductor.runtime.triton_lazy_compile (upstream's lazy "
    "cpp_wrapper kernel compile, which npu's cpp_wrapper is built on)",
)


def assert_matches(out, ref):
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
        assert o.device.type == "npu", o.device
        torch.testing.assert_close(o.cpu(), r, atol=1e-4, rtol=1e-4)


def graph(x, w, k):
    y = torch.relu(x) * 2.0 + 1.0  # pointwise
    s = y.sum(dim=-1)  # reduction
    m = y.t() @ w  # a view into an mm
    srt = torch.sort(x, dim=-1).values  # an ATen op on npu (op_policy)
    med = x.median(dim=-1).values  # an ATen fallback (no npu C shim: runtime dispatch)
    cv = torch.nn.functional.conv1d(x.t().unsqueeze(0), k)  # conv's extern kernel (npu's C shim)
    return s, m, srt, med, cv


def inputs(n):
    g = torch.Generator().manual_seed(n)
    return (
        torch.randn(n, 4, generator=g),
        torch.randn(n, 3, generator=g),
        torch.randn(2, 4, 1, generator=g),
    )


@pytest.fixture(scope="module")
def compiled(npu, tmp_path_factory):
    """The graph compiled once with cpp_wrapper, build_separate and precompiled headers on;
    what was compiled and which headers were precompiled."""
    precompiled = []
    real = codecache._precompile_header

    def spy(header, *args, **kwargs):
        path = real(header, *args, **kwargs)
        precompiled.append((header, path))
        return path

    old_env = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    # pytest removes the folder with its older base folders: nothing is left in /tmp
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = str(tmp_path_factory.mktemp("npu_cppwrap"))
    codecache._precompile_header = spy
    torch._dynamo.reset()
    LAUNCHES.clear()
    try:
        with inductor_config.patch(
            cpp_wrapper=True,
            cpp_wrapper_build_separate=True,
            cpp_cache_precompile_headers=True,
            fx_graph_cache=False,
        ):
            fn = torch.compile(graph, dynamic=False)
            runs = []
            x, w, k = inputs(6)
            xn, wn, kn = x.to(npu), w.to(npu), k.to(npu)
            torch._dynamo.mark_dynamic(xn, 0)
            torch._dynamo.mark_dynamic(wn, 0)
            out, codes = run_and_get_code(fn, xn, wn, kn)
            if os.environ.get("NPU_CPPWRAP_DUMP"):
                with open(os.environ["NPU_CPPWRAP_DUMP"], "w") as f:
                    f.write(codes[0])
            runs.append((out, graph(x, w, k)))
            first_run_launches = len(LAUNCHES)
            for n in (5, 9):  # other batch sizes: the same C++ entry (dynamic shapes)
                x, w, k = inputs(n)
                xn, wn, kn = x.to(npu), w.to(npu), k.to(npu)
                runs.append((fn(xn, wn, kn), graph(x, w, k)))
            yield {
                "codes": codes,
                "runs": runs,
                "precompiled": precompiled,
                "python_runs": (first_run_launches, len(LAUNCHES)),
            }
    finally:
        codecache._precompile_header = real
        if old_env is None:
            os.environ.pop("TORCHINDUCTOR_CACHE_DIR", None)
        else:
            os.environ["TORCHINDUCTOR_CACHE_DIR"] = old_env
        torch._dynamo.reset()


@pytest.mark.feature("L06")
@needs_lazy_compile
def test_cpp_wrapper_runs_npu_kernels_from_cpp(compiled):
    (code,) = compiled["codes"]
    # the wrapper is C++: kernels load and launch through npu-launcher's C ABI
    assert "inductor_entry_impl" in code
    assert "loadKernel(" in code and "launchKernel(" in code
    assert "npuTensorHandle(" in code
    assert "cached_torch_device_type_privateuse1" in code
    for out, ref in compiled["runs"]:
        assert_matches(out, ref)
    # the kernels' first call goes through Python (compile, tune, launch: upstream's lazy
    # compile); the later calls launch from C++ only, through npu-launcher's C ABI
    first, total = compiled["python_runs"]
    assert first > 0 and total == first


@pytest.mark.feature("L06")
@needs_lazy_compile
def test_cpp_wrapper_dynamic_shapes_compile_once(compiled):
    (code,) = compiled["codes"]
    # one entry for every batch size: the batch size is read from the inputs at run time
    # and flows into the grids and the allocations
    # torch 2.13 reads it from the tensor (``int64_t s0 = arg0_1_size[0];``); torch 2.14 and 2.15
    # pass the batch size as a SymInt input of the graph (``int64_t s77 = arg0_1;``)
    assert re.search(r"int64_t (s\d+) = arg\d+_1(_size\[0\])?;", code)
    assert len(compiled["runs"]) == 3
    for out, ref in compiled["runs"]:
        assert_matches(out, ref)


@pytest.mark.feature("L06")
@needs_lazy_compile
def test_cpp_wrapper_calls_views_extern_and_fallback_ops(compiled):
    (code,) = compiled["codes"]
    assert "reinterpret_tensor_wrapper(" in code  # the transposed view into the mm
    assert "aoti_torch_npu_mm_out(" in code  # extern mm: npu's C shim (include/npu_cpp_wrapper.h)
    assert "median" in code and "aoti_torch_npu_median" not in code  # runtime dispatch
    assert "aoti_torch_npu_convolution(" in code  # conv's ATen choice through npu's C shim


@pytest.mark.feature("L07")
@needs_lazy_compile
def test_build_separate_compiles_entry_and_kernels_separately(compiled):
    (code,) = compiled["codes"]
    # upstream's separate build: kernel code handed to the cache as its own compile unit
    assert "kernel_code=kernel_src" in code


@pytest.mark.feature("C01")
@needs_lazy_compile
def test_precompiled_header_is_npus(compiled):
    from npu_lowering.cpp_wrapper import header_path

    headers = [h for h, _ in compiled["precompiled"]]
    assert header_path() in headers, headers
    (pch,) = {p for h, p in compiled["precompiled"] if h == header_path()}
    assert os.path.exists(pch + ".gch")


def test_cpu_and_cuda_keep_upstreams_cpp_wrappers():
    from torch._inductor.codegen.common import (
        get_wrapper_codegen_for_device,
        init_backend_registration,
    )
    from torch._inductor.codegen.cpp_wrapper_cpu import CppWrapperCpu
    from torch._inductor.codegen.cpp_wrapper_gpu import CppWrapperGpu

    init_backend_registration()  # as a compile does first (this test may run before any)
    assert get_wrapper_codegen_for_device("cpu", True) is CppWrapperCpu
    assert get_wrapper_codegen_for_device("cuda", True) is CppWrapperGpu
    assert (
        codecache.CppWrapperCodeCache._get_uncompiled_header("cpu")
        == "torch/csrc/inductor/cpp_wrapper/cpu.h"
    )


def test_registering_npu_leaves_cudas_device_op_overrides_in_place():
    # torch 2.11 fills upstream's table of device op overrides only while it is empty: with npu
    # registered first, cuda's cpp wrapper and AOTInductor had no kernel driver (seen on the H200)
    import subprocess
    import sys

    code = (
        "import torch, npu_inductor; npu_inductor.enable()\n"
        "from torch._inductor.codegen.common import get_device_op_overrides\n"
        "from torch._inductor.codegen.cuda.device_op_overrides import CUDADeviceOpOverrides\n"
        "o = get_device_op_overrides('cuda')\n"
        "assert isinstance(o, CUDADeviceOpOverrides), type(o)\n"
        "assert 'cuModuleLoad' in o.kernel_driver()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]


@pytest.mark.feature("L06")
@needs_lazy_compile
def test_kernel_without_descriptor_is_a_clear_error():
    # the C++ wrapper launches npu kernels only through npu-launcher: a kernel object that ran
    # but has no descriptor (static launch off or refused) is named in the error
    import types

    from npu_lowering.cpp_wrapper_runtime import run_kernel_first

    ran = []
    kernel = types.SimpleNamespace(
        compile_results=[],
        launchers=[],
        run=lambda *a, **k: ran.append(a),
        inductor_meta={"kernel_name": "triton_poi_x_0"},
    )
    with pytest.raises(RuntimeError, match="triton_poi_x_0 has no npu-launcher descriptor"):
        run_kernel_first({"triton_poi_x_0": kernel}, "triton_poi_x_0", 0, [1])
    assert ran == [(1,)]


@pytest.mark.skipif(
    _compat.lazy_triton_compile_available(), reason="this torch has the lazy kernel compile"
)
def test_cpp_wrapper_without_lazy_compile_is_a_clear_error(npu):
    # torch 2.11: npu's cpp_wrapper is refused, naming what this torch lacks
    torch._dynamo.reset()
    with (
        inductor_config.patch(cpp_wrapper=True),
        pytest.raises(Exception, match="triton_lazy_compile"),
    ):
        torch.compile(lambda a: a.relu() + 1)(torch.randn(8, device="npu"))
    torch._dynamo.reset()
