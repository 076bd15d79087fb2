"""Upstream numerics flags keep working on npu (the codegen paths that read them are
upstream's; these tests fail if the npu path ignores them)."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code


def _code(fn, *args):
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(codes)


@pytest.mark.feature("N17")
def test_size_asserts_flag():
    x = torch.randn(4, 8, device="npu")
    with config.patch(size_asserts=True):
        _, code = _code(lambda a: a.relu() + 1, x)
    assert "assert_size_stride(arg0_1, (4, 8), (8, 1)" in code
    with config.patch(size_asserts=False):
        _, code = _code(lambda a: a.relu() + 2, x)
    assert "assert_size_stride(arg0_1" not in code


@pytest.mark.feature("N12")
def test_nan_asserts_flag_catches_nan_outputs_on_npu():
    x = torch.tensor([1.0, -1.0, 4.0], device="npu")
    with config.patch(nan_asserts=True):
        torch._dynamo.reset()
        with pytest.raises(AssertionError):  # the wrapper checks outputs for NaN
            torch.compile(lambda a: torch.sqrt(a) * 2)(x)
    with config.patch(nan_asserts=False):
        torch._dynamo.reset()
        out = torch.compile(lambda a: torch.sqrt(a) * 3)(x)
    assert torch.isnan(out.cpu()).tolist() == [False, True, False]


@pytest.mark.feature("N10")
def test_fallback_random_matches_eager_rng_on_npu():
    x = torch.zeros(64, device="npu")

    def fn(a):
        return torch.rand_like(a) + a

    with config.patch(fallback_random=True):
        torch._dynamo.reset()
        torch.npu.manual_seed(7)
        compiled = torch.compile(fn)(x)
        torch.npu.manual_seed(7)
        eager = fn(x)
    assert torch.equal(compiled.cpu(), eager.cpu())
    with config.patch(fallback_random=False):
        torch._dynamo.reset()
        torch.npu.manual_seed(7)
        inductor_rng = torch.compile(lambda a: torch.rand_like(a) + a * 2)(x)
    assert not torch.equal(inductor_rng.cpu(), eager.cpu())  # Inductor's own RNG stream differs
    assert ((inductor_rng.cpu() >= 0) & (inductor_rng.cpu() < 1)).all()


@pytest.mark.feature("N34")
def test_codegen_upcast_to_fp32_flag():
    x = torch.randn(32, device="npu").half()
    with config.patch({"triton.codegen_upcast_to_fp32": True}):
        out, code = _code(lambda a: a * a + 1, x)
    assert "xmask).to(tl.float32)" in code  # loads upcast: the arithmetic runs in float32
    torch.testing.assert_close(out.cpu(), x.cpu() * x.cpu() + 1, atol=1e-3, rtol=1e-3)
    with config.patch({"triton.codegen_upcast_to_fp32": False}):
        _, code = _code(lambda a: a * a + 2, x)
    assert "tl.float32" not in code.split("@triton.jit")[-1]  # float16 all the way
