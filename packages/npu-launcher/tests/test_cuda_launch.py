"""The cuda driver really launching Triton cubins (runs only where a CUDA device exists: the
H200 of the `device` tool, torch 2.11 + Triton 3.6)."""

import subprocess
import sys
import threading
from pathlib import Path

import pytest
import torch

from npu_launcher import DescriptorError, KernelArgumentError, bind, descriptor_from_compiled

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
BENCH = Path(__file__).resolve().parents[3] / "bench"  # cuda_routes.py: the benchmark's cuda routes


def _cuda_routes():
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    import cuda_routes

    return cuda_routes


@pytest.fixture(scope="module")
def jit_add(kernels):
    """The CompiledKernel Triton's own JIT produced for this GPU, and its descriptor."""
    x = torch.randn(4096, device="cuda")
    ck = kernels.add_kernel[(4,)](x, x, torch.empty_like(x), 4096, BLOCK=1024)
    return ck, descriptor_from_compiled(ck, grid=(("cdiv", "n", 1024), 1, 1))


def test_launch_on_the_current_stream(jit_add):
    _, d = jit_add
    launch = bind(d, device=0)
    assert launch.driver == "cuda" and launch.function != 0
    x, y = torch.randn(4000, device="cuda"), torch.randn(4000, device="cuda")
    out = torch.zeros_like(x)
    launch(*d.grid.evaluate({"n": 4000}), torch.cuda.current_stream().cuda_stream, x, y, out, 4000)
    torch.testing.assert_close(out, x + y)


def test_launch_on_a_side_stream_and_from_a_new_thread(jit_add):
    _, d = jit_add
    launch = bind(d, device=0)
    x = torch.randn(1024, device="cuda")
    out1, out2 = torch.zeros_like(x), torch.zeros_like(x)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        launch(1, 1, 1, s.cuda_stream, x, x, out1, 1024)
    s.synchronize()
    errors = []

    def worker():  # a thread with no current CUDA context
        try:
            launch(1, 1, 1, 0, x, x, out2, 1024)
            torch.cuda.synchronize()
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert not errors, errors
    torch.testing.assert_close(out1, 2 * x)
    torch.testing.assert_close(out2, 2 * x)


def test_bad_input_on_cuda(jit_add):
    _, d = jit_add
    launch = bind(d, device=0)
    x = torch.randn(1024, device="cuda")
    with pytest.raises(
        KernelArgumentError,
        match=r"argument 'x' \(#0\): tensor is on cpu, the kernel runs on cuda:0",
    ):
        launch(1, 1, 1, 0, x.cpu(), x, x, 1024)
    with pytest.raises(
        KernelArgumentError, match=r"argument 'y' \(#1\): tensor dtype is torch.float16"
    ):
        launch(1, 1, 1, 0, x, x.half(), x, 1024)
    with pytest.raises(KernelArgumentError, match=r"argument 'out' \(#2\).*not 16-byte aligned"):
        launch(1, 1, 1, 0, x, x, x[1:], 1023)


def test_descriptor_for_another_arch_is_refused(jit_add):
    import dataclasses

    _, d = jit_add
    major, minor = torch.cuda.get_device_capability(0)
    other = dataclasses.replace(
        d, target=dataclasses.replace(d.target, arch="80" if major * 10 + minor != 80 else "90")
    )
    with pytest.raises(DescriptorError, match="was compiled for sm_"):
        bind(other, device=0)


def test_restore_in_a_new_process_without_triton(jit_add, tmp_path):
    _, d = jit_add
    path = tmp_path / "add.nplkd"
    path.write_bytes(d.to_bytes())
    code = f"""
import sys
sys.modules['triton'] = None  # a restore must not need Triton
import torch
from npu_launcher import KernelDescriptor, bind
d = KernelDescriptor.from_bytes(open({str(path)!r}, 'rb').read())
launch = bind(d, device=0)
x = torch.arange(1024.0, device='cuda'); out = torch.zeros_like(x)
launch(1, 1, 1, torch.cuda.current_stream().cuda_stream, x, x, out, 1024)
print(bool(torch.equal(out, 2 * x)))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-3000:]


def test_inductor_cuda_kernels_route_through_npu_launcher():
    """The benchmark's cuda mode: Inductor's own cuda kernels launched by our launch objects
    (route on), upstream's launcher again once it is off."""
    li = _cuda_routes()

    fn = lambda a, b: torch.softmax(a.sin() + b, -1) * 2  # noqa: E731
    a, b = torch.randn(8, 40, device="cuda"), torch.randn(8, 40, device="cuda")
    li.ROUTED_CUDA_KERNELS.clear()
    li.route_cuda_kernels(True)
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(use_static_cuda_launcher=False, fx_graph_cache=False):
            out = torch.compile(fn)(a, b)
    finally:
        li.route_cuda_kernels(False)
    torch.testing.assert_close(out, fn(a, b))
    assert li.ROUTED_CUDA_KERNELS  # every launch of this graph went through a launch object
    li.ROUTED_CUDA_KERNELS.clear()
    torch._dynamo.reset()
    with torch._inductor.config.patch(use_static_cuda_launcher=False, fx_graph_cache=False):
        torch.compile(lambda a: a.cos() * 3)(a)
    assert not li.ROUTED_CUDA_KERNELS


def test_cuda_direct_launch_wrapper_calls_launch_objects():
    """The benchmark's cuda direct mode: npu-lowering's direct-launch mixin over upstream's
    cuda codegen (bench/cuda_routes.py's ``cuda_wrapper_class``) calls routed kernels' launch
    objects from the generated code (slots promoted after the first run), results equal eager;
    off again, upstream's wrapper."""
    pytest.importorskip("npu_lowering")
    li = lowering_compat = _cuda_routes()
    from npu_lowering.runtime.direct_launch import PROMOTED
    from torch._inductor.utils import run_and_get_code

    fn = lambda a, b: torch.softmax(a.sin() + b, -1) * 2  # noqa: E731
    a, b = torch.randn(8, 40, device="cuda"), torch.randn(8, 40, device="cuda")
    PROMOTED.clear()
    li.route_cuda_kernels(True)
    lowering_compat.route_cuda_wrapper(lowering_compat.cuda_wrapper_class())
    try:
        torch._dynamo.reset()
        with torch._inductor.config.patch(use_static_cuda_launcher=False, fx_graph_cache=False):
            compiled = torch.compile(fn)
            out, (code,) = run_and_get_code(compiled, a, b)
            for _ in range(2):
                out = compiled(a, b)
    finally:
        li.route_cuda_kernels(False)
        lowering_compat.route_cuda_wrapper(None)
    torch.testing.assert_close(out, fn(a, b))
    assert "_npu_dl[0](" in code and ".run(" not in code.split("def call")[1]
    assert PROMOTED, "no direct-launch slot was promoted to a launch object"
    torch._dynamo.reset()
    with torch._inductor.config.patch(use_static_cuda_launcher=False, fx_graph_cache=False):
        _, (code,) = run_and_get_code(torch.compile(lambda a: a.cos() * 3), a)
    assert "_npu_dl" not in code
