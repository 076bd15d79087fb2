"""Numerics rows whose flag upstream reads outside the Triton overrides (issue 19 item 1: N04,
N23, N26, N29). Each test switches its flag, sees the generated code change on npu, and
compares with eager on the CPU."""

import re

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache, run_and_get_code


def _code(fn, *args):
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn, fullgraph=True), *args)
    return out, codes


@pytest.mark.feature("N04")
def test_cutlass_fast_math_reaches_the_gemm_templates_epilogue():
    pytest.importorskip("npu_autotune.gemm_templates")  # the small-GEMM template's tiles
    torch.manual_seed(0)
    a, b = torch.randn(4, 64, device="npu"), torch.randn(64, 64, device="npu") / 8

    def fn(x, y):
        return torch.exp(x @ y)

    seen = {}
    for fast in (True, False):
        with fresh_cache(), config.patch({"cutlass.use_fast_math": fast}):
            out, codes = _code(fn, a, b)
        template = "\n".join(c for c in codes if "tl.dot(" in c)
        assert template, "the small GEMM is a Triton template on npu"
        seen[fast] = template
        torch.testing.assert_close(out.cpu(), fn(a.cpu(), b.cpu()), atol=1e-4, rtol=1e-4)
    assert "tl_math.exp(" in seen[True] and "libdevice.exp(" not in seen[True]
    assert "libdevice.exp(" in seen[False]
    assert not config.use_fast_math  # only the template's codegen saw it


@pytest.mark.feature("N23")
def test_unbacked_float_arguments_keep_fp64_on_npu():
    """``.item()`` of a float64 tensor reaches an npu kernel as a scalar argument typed fp64
    (Inductor casts it to the op's float32 on first use; triton-ascend and bishengir accept
    that kernel), fp32 with the flag off; npu-sim passes each as its signature's type.
    The float feeds ``torch.where``: torch 2.15's tensorify pass (AOTAutograd's
    ``tensorify_python_scalars``) turns an ``.item()`` that only clamp_min/clamp_max, add, mul
    and the comparisons use back into tensor ops on every device, so no scalar argument is left."""
    x = torch.full((16,), 2.0**-24, device="npu")
    x[3:] = torch.linspace(-3, 3, 13)
    fill = torch.tensor([1 + 2.0**-40], dtype=torch.float64, device="npu")

    def fn(a, b):
        return torch.where(a > 0, a, b.item()) + a

    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        for flag, ty in ((True, "fp64"), (False, "fp32")):
            with config.patch(_use_fp64_for_unbacked_floats=flag):
                out, codes = _code(fn, x, fill)
            assert re.findall(r"'ks0': '(\w+)'", "\n".join(codes)) == [ty]
            assert torch.equal(out.cpu(), fn(x.cpu(), fill.cpu()))


@pytest.mark.feature("N26")
def test_backward_outputs_keep_eager_strides_unless_told_otherwise():
    """With the flag off the gradients are not user visible: comprehensive padding (npu is a
    GPU type for Inductor) pads their row stride 1025 to 1056."""
    strides = {}
    for flag in (True, False):
        x = torch.randn(4, 1025, device="npu", requires_grad=True)
        w = torch.randn(4, 1025, device="npu", requires_grad=True)

        def step():
            loss = torch.compile(lambda a, b: (a.sin() * b).sum())(x, w)
            loss.backward()

        with config.patch(bw_outputs_user_visible=flag):
            torch._dynamo.reset()
            _, codes = run_and_get_code(step)
        strides[flag] = set(re.findall(r"empty_strided\(\(4, 1025\), \((\d+), 1\)", codes[-1]))
        torch.testing.assert_close(x.grad.cpu(), x.detach().cpu().cos() * w.detach().cpu())
        torch.testing.assert_close(w.grad.cpu(), x.detach().cpu().sin())
    assert strides[True] == {"1025"} and strides[False] == {"1056"}


@pytest.mark.skipif(
    not hasattr(config, "emulate_precision_casts_on_saved_tensors"),
    reason=f"torch {torch.__version__} has no Inductor flag emulate_precision_casts_on_saved_tensors",
)
@pytest.mark.feature("N29")
def test_saved_low_precision_value_is_rounded_as_eager_saves_it():
    """``sin(y) * y`` in bf16 is saved for the backward and used by the forward: with the flag
    the npu forward kernel rounds it to bf16 before the later math, as eager does."""
    torch.manual_seed(0)
    a = torch.randn(256, device="npu", dtype=torch.bfloat16)
    b = torch.randn(256, device="npu", dtype=torch.bfloat16)
    w0 = torch.randn(256, dtype=torch.bfloat16)

    def f(a, b, w):
        y = a * b + 0.1
        return (y.sin() * y * w).sum()

    rounding = re.compile(
        r"(tmp\d+) = tmp\d+\.to\(tl\.bfloat16\)\n\s*tmp\d+ = \1\.to\(tl\.float32\)"
    )
    for flag in (True, False):
        w = w0.to("npu").requires_grad_()

        def step():
            out = torch.compile(f)(a, b, w)
            out.backward()
            return out

        with config.patch(emulate_precision_casts_on_saved_tensors=flag):
            torch._dynamo.reset()
            out, codes = run_and_get_code(step)
        assert bool(rounding.search(codes[0])) == flag
        w_ref = w0.clone().requires_grad_()
        ref = f(a.cpu(), b.cpu(), w_ref)
        ref.backward()
        torch.testing.assert_close(w.grad.cpu(), w_ref.grad, atol=2e-2, rtol=2e-2)
        if flag:  # the forward sums the rounded values, as eager
            torch.testing.assert_close(out.float().cpu(), ref.float(), atol=0.25, rtol=2e-2)
