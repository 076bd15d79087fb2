"""Dtype views, bitcasts, bf16/fp16 scatters and atomics on npu-sim (issue 16 item 6).

- ``x.view(dtype)`` between every pair of 8/16/32-bit types inside a compiled function, same
  element size (a bitcast in the kernel) and different (upstream's ATen view between kernels);
- a dtype view feeding a GEMM template (the template's load is bitcast to the view's dtype:
  "Both operands must be same dtype" / "Unsupported lhs dtype int16" before);
- bf16/fp16 ``scatter_add`` / ``index_put(accumulate=True)`` / ``scatter_reduce``, which
  generate ``tl.atomic_add`` (npu-sim's interpreter raised "Unsupported data type" for bf16);
- float32 -> bfloat16 rounds to nearest even, as on Ascend (the interpreter truncated);
  bf16 ``tl.dot`` multiplies values (the interpreter multiplied the uint16 bit patterns).
"""

import pytest
import torch
from torch._inductor.utils import run_and_get_code

TYPES = [
    torch.int8,
    torch.uint8,
    torch.int16,
    torch.float16,
    torch.bfloat16,
    torch.int32,
    torch.float32,
]


def make(dtype, shape=(4, 8)):
    torch.manual_seed(0)
    if dtype.is_floating_point:
        return torch.randn(shape).to(dtype).to("npu")
    # small non-negative integers: their bit patterns are finite floats of every width
    return torch.randint(0, 100, shape, dtype=dtype).to("npu")


def same(out, ref):
    out = out.cpu()
    assert out.dtype == ref.dtype and out.shape == ref.shape
    if ref.dtype.is_floating_point:
        torch.testing.assert_close(out, ref, atol=0, rtol=0, equal_nan=True)
    else:
        assert torch.equal(out, ref)


def compiled(fn, *args):
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), *args)
    same(out, fn(*(a.cpu() for a in args)))
    return "\n".join(codes)


@pytest.mark.parametrize("src", TYPES, ids=lambda d: str(d).removeprefix("torch."))
def test_dtype_views_between_kernels(src):
    others = [d for d in TYPES if d != src]

    def fn(x):
        y = x + 1  # computed in a kernel, viewed as every other type, used again in a kernel
        return tuple(y.view(d) + y.view(d) for d in others)

    torch._dynamo.reset()
    x = make(src)
    outs, codes = run_and_get_code(torch.compile(fn), x)
    for out, ref in zip(outs, fn(x.cpu())):
        same(out, ref)
    code = "\n".join(codes)
    for d in others:
        if d.itemsize == src.itemsize:  # a bitcast inside the kernel, not an ATen view
            assert f".to({triton_dtype(d)}, bitcast=True)" in code, d


def triton_dtype(d):
    return {
        torch.float16: "tl.float16",
        torch.bfloat16: "tl.bfloat16",
        torch.float32: "tl.float32",
        torch.int8: "tl.int8",
        torch.uint8: "tl.uint8",
        torch.int16: "tl.int16",
        torch.int32: "tl.int32",
    }[d]


@pytest.mark.parametrize(
    "src,dst",
    [
        (torch.float16, torch.bfloat16),
        (torch.bfloat16, torch.float16),
        (torch.int16, torch.float16),
        (torch.int16, torch.bfloat16),
    ],
    ids=lambda d: str(d).removeprefix("torch."),
)
def test_dtype_view_into_a_gemm_template(src, dst):
    pytest.importorskip("npu_autotune.gemm_templates")  # the template candidates
    from torch._inductor.utils import fresh_cache

    torch.manual_seed(0)
    x = torch.randn(4, 4).to(dst).view(src).to("npu")  # the bits of small dst values
    y = torch.randn(4, 4, dtype=dst, device="npu")

    def fn(x, y):
        return x.view(dst) @ (y + 1)

    with fresh_cache():
        torch._dynamo.reset()
        out, codes = run_and_get_code(torch.compile(fn), x, y)
    code = "\n".join(codes)
    assert (
        "tl.dot(" in code
        and f".to({'tl.bfloat16' if dst == torch.bfloat16 else 'tl.float16'}, bitcast=True)" in code
    )
    torch.testing.assert_close(
        out.cpu().float(), fn(x.cpu(), y.cpu()).float(), atol=5e-2, rtol=2e-2
    )


SCATTERS = {
    "scatter_add": lambda s, i: torch.zeros(8, 6, dtype=s.dtype, device=s.device).scatter_add(
        0, i, s
    ),
    "index_put_accumulate": lambda s, i: torch.zeros(
        8, 6, dtype=s.dtype, device=s.device
    ).index_put((i[:, 0],), s, accumulate=True),
    "scatter_reduce_sum": lambda s, i: torch.ones(
        8, 6, dtype=s.dtype, device=s.device
    ).scatter_reduce(0, i, s, "sum"),
}


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("case", list(SCATTERS))
def test_low_precision_scatter_and_atomics(dtype, case):
    fn = SCATTERS[case]
    torch.manual_seed(0)
    s = torch.randn(12, 6).to(dtype).to("npu")
    i = torch.randint(0, 8, (12, 6)).to("npu")  # repeated indices: the atomics collide
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), s, i)
    assert "tl.atomic_" in codes[0]
    # each atomic step rounds to the low-precision dtype, as eager's CPU loop does
    torch.testing.assert_close(
        out.cpu().float(), fn(s.cpu(), i.cpu()).float(), atol=2e-2, rtol=2e-2
    )


def test_float32_to_bfloat16_rounds_to_nearest_even():
    # values that truncation and rounding map to different bfloat16s
    x = torch.tensor(
        [1.0 + 2**-8 + 2**-12, -1.0 - 2**-8 - 2**-12, 3.14159, 1.0 + 2**-8], device="npu"
    )
    code = compiled(lambda x: (x * 2.0).to(torch.bfloat16), x)
    assert "@triton.jit" in code and "bf16" in code
    compiled(lambda x: x.to(torch.bfloat16).view(torch.int16) + 1, x * 3)  # rounded bits, exactly
