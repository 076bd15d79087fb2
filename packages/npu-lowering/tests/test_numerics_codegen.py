"""Numerics flags that change what npu kernels compute (issue 19 items 1, 5). Each test
switches its flag and sees the generated code, and where npu-sim can show it the result,
change; results are compared with eager on the CPU."""

import pytest
import torch
import torch._functorch.config
from torch._inductor import config
from torch._inductor.utils import fresh_cache, run_and_get_code

from npu_lowering import config as npu_config


def needs_flag(module, flag: str):
    """Skip on a torch without this upstream flag (dotted for a sub-config): 2.11 lacks some of 2.13's."""
    obj = module
    for part in flag.split("."):
        obj = getattr(obj, part, None) if obj is not None else None
    return pytest.mark.skipif(
        obj is None, reason=f"torch {torch.__version__} has no {module.__name__} flag {flag}"
    )


def _code(fn, *args):
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(codes)


def _kernels(code: str) -> str:
    return "\n".join(part for part in code.split("@triton.jit")[1:])


def _bits(t: torch.Tensor) -> list:
    return (
        t.cpu().view(torch.int32).tolist()
        if t.dtype == torch.float32
        else t.cpu().view(torch.int16).tolist()
    )


@pytest.mark.feature("N08")
def test_division_rounding_uses_div_rn_and_matches_eager_bits():
    x, y = torch.randn(64, device="npu"), torch.randn(64, device="npu") + 3
    with config.patch({"eager_numerics.division_rounding": True}):
        out, code = _code(lambda a, b: a / b, x, y)
    assert "triton.language.div_rn(" in _kernels(code)
    assert _bits(out) == _bits(x.cpu() / y.cpu())
    with config.patch({"eager_numerics.division_rounding": False}):
        _, code = _code(lambda a, b: a / b + 0, x, y)
    assert "div_rn" not in _kernels(code)


@pytest.mark.feature("N09")
@needs_flag(config, "eager_numerics.use_pytorch_libdevice")
def test_use_pytorch_libdevice_routes_log_through_libdevice():
    x = torch.rand(64, device="npu") + 0.5
    with config.patch({"eager_numerics.use_pytorch_libdevice": True}):
        out, code = _code(lambda a: torch.log(a), x)
    assert "libdevice.log(" in _kernels(code)  # npu: the flavour's libdevice (runtime/math.py)
    torch.testing.assert_close(out.cpu(), torch.log(x.cpu()), atol=1e-6, rtol=1e-6)
    with config.patch({"eager_numerics.use_pytorch_libdevice": False}):
        _, code = _code(lambda a: torch.log(a) + 0, x)
    assert "tl_math.log(" in _kernels(code) and "libdevice.log(" not in _kernels(code)


@pytest.mark.feature("N19")
def test_use_fast_math_picks_the_fast_exp():
    x = torch.randn(64, device="npu")
    with config.patch(use_fast_math=True):
        out, code = _code(lambda a: torch.exp(a), x)
    assert "tl_math.exp(" in _kernels(code) and "libdevice.exp(" not in _kernels(code)
    torch.testing.assert_close(out.cpu(), torch.exp(x.cpu()), atol=1e-5, rtol=1e-5)
    with config.patch(use_fast_math=False):
        _, code = _code(lambda a: torch.exp(a) + 0, x)
    assert "libdevice.exp(" in _kernels(code)


@pytest.mark.feature("N07")
def test_disable_ftz_reaches_the_kernel_and_subnormals_survive():
    tiny = torch.full((16,), 1e-39, device="npu")  # float32 subnormal
    with config.patch({"eager_numerics.disable_ftz": True}):
        out, code = _code(lambda a: a * 1.5, tiny)
    assert "'disable_ftz': True" in code  # the compile option upstream turns into no-FTZ
    assert _bits(out) == _bits(tiny.cpu() * 1.5) and (out.cpu() != 0).all()
    with config.patch({"eager_numerics.disable_ftz": False}):
        _, code = _code(lambda a: a * 2.5, tiny)
    assert "'disable_ftz': False" in code


@pytest.mark.feature("N28")
def test_emulate_precision_casts_rounds_fused_half_intermediates():
    """The npu kernel rounds as upstream Inductor does on the CPU with the flag, bit for bit.
    That is eager's result on torch 2.13; torch 2.15's lowering also rounds the scalar 3.3 to
    float16 before the multiply (eager keeps it in float32), on every device."""
    x = torch.randn(256, device="npu").half()
    fn = lambda a: (a * 3.3).to(torch.float16) * a + 1  # noqa: E731
    with config.patch(emulate_precision_casts=True):
        out, code = _code(fn, x)
        upstream, _ = _code(fn, x.cpu())
    assert ".to(tl.float16)" in _kernels(code)  # the intermediate rounded as eager rounds it
    assert _bits(out) == _bits(upstream)
    with config.patch(emulate_precision_casts=False):
        _, code = _code(fn, x)
    assert ".to(tl.float16)" not in _kernels(code).split("tl.store")[0]


@pytest.mark.feature("N30")
@needs_flag(config, "keep_addmm_fused_for_half_dtypes")
def test_keep_addmm_fused_for_half_dtypes():
    a, b = torch.randn(8, 16, device="npu").half(), torch.randn(16, 16, device="npu").half()
    bias = torch.randn(16, device="npu").half()
    fn = lambda x, w, c: torch.addmm(c, x, w).relu()  # noqa: E731
    aten = {"max_autotune_gemm_backends": "ATEN"}  # the ATen GEMM, whose bias upstream may unfuse
    with config.patch(keep_addmm_fused_for_half_dtypes=True, **aten):
        out, code = _code(fn, a, b, bias)
    assert "extern_kernels.addmm(" in code
    torch.testing.assert_close(
        out.cpu(),
        fn(a.cpu().float(), b.cpu().float(), bias.cpu().float()).half(),
        atol=1e-2,
        rtol=1e-2,
    )
    with config.patch(keep_addmm_fused_for_half_dtypes=False, **aten):
        _, code = _code(fn, a, b, bias)
    assert "extern_kernels.addmm(" not in code and "extern_kernels.mm(" in code


@pytest.mark.feature("N18")
def test_strict_signed_zero_on_npu():
    """torch 2.14's ``strict_signed_zero`` on 2.13 (``npu_lowering.config``): the
    sign of zero survives ``-x`` and maximum/minimum (-0.0 < +0.0, IEEE 754-2019)."""
    a = torch.tensor([0.0, -0.0, 0.0, -0.0, 1.0], device="npu")
    b = torch.tensor([-0.0, 0.0, 0.0, -0.0, -2.0], device="npu")
    fn = lambda x, y: (-x, torch.maximum(x, y), torch.minimum(x, y))  # noqa: E731

    # torch >= 2.14 has upstream's flag, which decides there; patch(), not monkeypatch.setattr,
    # for both config modules: monkeypatch's undo left torch's config without the key, and every
    # later reduction compile failed ("strict_signed_zero does not exist")
    def upstream(value):
        return {"strict_signed_zero": value} if hasattr(config, "strict_signed_zero") else {}

    with config.patch(upstream(True)), npu_config.patch(strict_signed_zero=True):
        with fresh_cache():
            (neg, hi, lo), code = _code(fn, a, b)
        assert (
            "neg_signed_zero(" in code
            and "maximum_signed_zero(" in code
            and "minimum_signed_zero(" in code
        )
        assert torch.signbit(neg.cpu()).tolist() == [True, False, True, False, True]
        assert torch.signbit(hi.cpu()).tolist() == [False, False, False, True, False]
        assert torch.signbit(lo.cpu()).tolist() == [True, True, False, True, True]
        assert hi.cpu().tolist() == [0.0, 0.0, 0.0, 0.0, 1.0] and lo.cpu().tolist()[-1] == -2.0
        # the NaN-propagating maximum/minimum stay upstream's
        nan = torch.tensor([float("nan"), 1.0], device="npu")
        (_, hi, lo), _ = _code(fn, nan, torch.tensor([1.0, float("nan")], device="npu"))
        assert torch.isnan(hi.cpu()).all() and torch.isnan(lo.cpu()).all()
    with config.patch(upstream(False)), npu_config.patch(strict_signed_zero=False), fresh_cache():
        _, code = _code(fn, a, b)
    assert "signed_zero" not in code


@pytest.mark.feature("H01")
@needs_flag(config, "cache_sdpa_constraint")
def test_cache_sdpa_constraint_converts_a_shared_key_value_once():
    """A tensor used as both K and V of npu's fused attention (the PrivateUse1 op upstream
    constrains, torch_npu's SDPA entry) is laid out once with the cache, twice without."""
    q = torch.randn(1, 2, 8, 16, device="npu")
    kv = torch.randn(1, 2, 16, 8, device="npu").transpose(2, 3)  # last dim not dense
    op = torch.ops.aten._scaled_dot_product_fused_attention_overrideable
    ref = torch.nn.functional.scaled_dot_product_attention(q.cpu(), kv.cpu(), kv.cpu())
    with config.patch(cache_sdpa_constraint=True):
        out, code = _code(lambda a, b: op(a, b, b)[0], q, kv)
    assert "_scaled_dot_product_fused_attention_overrideable.default(arg0_1, buf0, buf0)" in code
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    with config.patch(cache_sdpa_constraint=False):
        out, code = _code(lambda a, b: op(a, b, b)[0] + 0, q, kv)
    assert "_scaled_dot_product_fused_attention_overrideable.default(arg0_1, buf0, buf1)" in code
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


@pytest.mark.feature("H03")
def test_skip_l1_cache_marks_single_use_loads():
    """Single-use loads keep upstream's ``cache_modifier='.cg'``: triton-ascend 3.2.0 accepts
    it and drops it (no cache attribute reaches linalg; Ascend's vector cores DMA GM->UB
    without an L1 data cache), the interpreter ignores it (README: "Numerics")."""
    x = torch.randn(64, 32, device="npu")
    with config.patch({"triton.skip_l1_cache": True}):
        out, code = _code(lambda a, b: a + b, x, x * 2)
    assert "cache_modifier='.cg'" in _kernels(code)
    assert torch.equal(out.cpu(), x.cpu() + x.cpu() * 2)
    with config.patch({"triton.skip_l1_cache": False}):
        _, code = _code(lambda a, b: a + b + 0, x, x * 2)
    assert "cache_modifier" not in _kernels(code)


@pytest.mark.feature("N33")
@needs_flag(torch._functorch.config, "enable_complex_wrapper")
def test_complex_wrapper_computes_complex_math_in_npu_kernels():
    """npu kernels take no complex dtype (dtype policy: ATen per node); with functorch's
    ``enable_complex_wrapper`` the same math becomes real/imag pairs in an npu kernel."""
    import torch._functorch.config as functorch_config

    z = torch.randn(8, device="npu", dtype=torch.complex64)
    fn = lambda a: (a * a + 1).abs()  # noqa: E731
    ref = fn(z.cpu())
    with functorch_config.patch(enable_complex_wrapper=True):
        out, code = _code(fn, z)
    assert "@triton.jit" in code and "aten.mul.Tensor" not in code.split("def call")[-1]
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
    with functorch_config.patch(enable_complex_wrapper=False):
        out, code = _code(fn, z)
    assert "@triton.jit" not in code  # every node is a complex ATen fallback
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)
