"""T03: a pointwise consumer of a user Triton kernel's single tl.store fused into the user
kernel on npu (epilogue_fusion_user_defined_triton_kernel): the intermediate buffer is gone."""

import pytest
import torch
import torch._inductor.config
import triton
import triton.language as tl
from torch._inductor import config
from torch._inductor.utils import run_and_get_code


@pytest.fixture(scope="module", autouse=True)
def components():
    # Dynamo puts user kernels on npu tensors into the graph once every component is up
    import npu_inductor

    npu_inductor.enable()


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + tl.load(y + offs, mask=m), mask=m)


def add_relu(x, y):
    out = torch.empty_like(x)
    add[(triton.cdiv(x.numel(), 64),)](x, y, out, x.numel(), BLOCK=64)
    return out.relu()


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "epilogue_fusion_user_defined_triton_kernel"),
    reason=f"torch {torch.__version__} has no Inductor flag epilogue_fusion_user_defined_triton_kernel",
)
@pytest.mark.feature("T03")
def test_a_relu_after_a_user_kernel_is_written_by_the_user_kernel(fresh):
    torch.manual_seed(0)
    x, y = torch.randn(256, device="npu"), torch.randn(256, device="npu")
    want = (x.cpu() + y.cpu()).relu()
    codes = {}
    for on in (True, False):
        torch._dynamo.reset()
        with config.patch(epilogue_fusion_user_defined_triton_kernel=on):
            out, code = run_and_get_code(torch.compile(add_relu), x, y)
        torch.testing.assert_close(out.cpu(), want)
        codes[on] = "\n".join(code)
    # fused: the user kernel is the only kernel; apart: a relu kernel follows it
    assert codes[True].count("@triton.jit") == 1 and codes[False].count("@triton.jit") == 2, codes
