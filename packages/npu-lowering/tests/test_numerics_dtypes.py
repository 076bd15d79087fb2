"""Ascend's dtype limits handled explicitly (issue 19 item 2, as far as it goes here): each
dtype family does what ``dtype_policy.DECISIONS`` says, against eager, and the doctor shows
the decisions. Nothing is computed in a narrower type than eager's."""

import re

import torch
from torch._inductor.utils import run_and_get_code

from npu_lowering import dtype_policy


def _run(fn, *args):
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), *args)
    return out, "\n".join(codes)


def _kernels(code: str) -> str:
    return "\n".join(code.split("@triton.jit")[1:])


def test_float64_reductions_are_exact_and_never_narrowed():
    x = torch.randn(4, 1000, dtype=torch.float64, device="npu") * 1e10 + 1
    out, code = _run(lambda a: (a.sum(1), a.mean(), a.max(1).values), x)
    ref = (x.cpu().sum(1), x.cpu().mean(), x.cpu().max(1).values)
    for o, r in zip(out, ref):
        assert o.dtype == torch.float64 and torch.equal(o.cpu(), r)
    assert "fp64" not in code and "tl.float64" not in _kernels(code)


def test_int64_reduction_beyond_int32_is_exact_in_an_npu_kernel():
    x = torch.full((3, 64), 2**40 + 7, dtype=torch.int64, device="npu")
    x[1] = -(2**45)
    out, code = _run(lambda a: a.sum(1) * 3 + 1, x)
    assert "@triton.jit" in code and "'*i64'" in code  # native int64, not an ATen fallback
    assert out.dtype == torch.int64 and torch.equal(out.cpu(), x.cpu().sum(1) * 3 + 1)


def test_uint8_overflow_wraps_as_eager():
    a = torch.arange(200, 256, dtype=torch.uint8, device="npu")
    b = torch.full_like(a, 77)
    out, code = _run(lambda x, y: (x + y) * 3 - y, a, b)
    assert "'*u8'" in code
    assert out.dtype == torch.uint8 and torch.equal(out.cpu(), (a.cpu() + b.cpu()) * 3 - b.cpu())


def test_mixed_dtype_promotion_matches_eager():
    i = torch.arange(-8, 8, dtype=torch.int32, device="npu")
    h = torch.linspace(-2, 2, 16, device="npu").half()
    u = torch.arange(16, dtype=torch.uint8, device="npu")
    flags = torch.arange(16, device="npu") % 3 == 0
    fn = lambda i, h, u, f: (i * h, u + i, f + u, h / i.clamp(min=1), torch.where(f, i, u))  # noqa: E731
    out, _ = _run(fn, i, h, u, flags)
    for o, r in zip(out, fn(i.cpu(), h.cpu(), u.cpu(), flags.cpu())):
        assert o.dtype == r.dtype
        torch.testing.assert_close(o.cpu(), r, atol=1e-3, rtol=1e-3)


def test_doctor_reports_every_dtype_decision():
    report = dtype_policy.doctor_report()
    assert report["decisions"]["float64"] == "ATen per node"
    assert report["decisions"]["int64"] == "native in kernels"
    families = {"float64", "int64", "uint8", "bool", "uint16/uint32/uint64", "complex64/complex128"}
    assert families <= set(report["decisions"])
    assert any(re.match(r"float64: ATen per node \(", row) for row in report["rows"])


def test_int64_index_arithmetic_beyond_2_to_the_31():
    """Index values past int32 without 2^31 elements: an iota starting at 2^31 - 4 and gather
    indices computed from int64 values near 2^31 (int32 arithmetic would wrap negative)."""
    base = 2**31 - 4
    t = torch.arange(16, dtype=torch.float32, device="npu")
    i = torch.arange(base, base + 8, dtype=torch.int64, device="npu")

    def fn(t, i):
        iota = torch.arange(base, base + 8, device=t.device) * 3 + 1  # index_expr in int64
        return iota, t[i - base + 2] * 2, (i * 5) // 3

    out, code = _run(fn, t, i)
    assert "@triton.jit" in code
    assert "x0.to(tl.int64)" in code  # the iota's index variable widened before the arithmetic
    for o, r in zip(out, fn(t.cpu(), i.cpu())):
        assert o.dtype == r.dtype and torch.equal(o.cpu(), r)


def test_mixed_float64_promotion_stays_exact_by_default():
    h = torch.linspace(-2, 2, 16, device="npu").half()
    d = torch.randn(16, dtype=torch.float64, device="npu") * 1e-9 + 1
    i = torch.arange(16, dtype=torch.int64, device="npu") + 2**40
    fn = lambda h, d, i: (h * d, d + i, (h.float() * 3).relu())  # noqa: E731
    out, code = _run(fn, h, d, i)
    for o, r in zip(out, fn(h.cpu(), d.cpu(), i.cpu())):
        assert o.dtype == r.dtype and torch.equal(o.cpu(), r)  # float64 math bit for bit
    assert "tl.float64" not in _kernels(code)
