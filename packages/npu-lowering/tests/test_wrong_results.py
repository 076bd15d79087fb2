"""Issue 16 item 9: results that were wrong or missing on npu, each reproduced here.

- Bessel functions and erfcx: Inductor's kernels call ``libdevice.j0/j1/y0/y1``,
  ``cyl_bessel_i0/i1`` and ``erfcx``, which our portable libdevice lacked (the kernel failed
  to build on npu-sim and Ascend).
- baddbmm (and every GEMM template) in bfloat16: npu-sim's interpreter multiplied bf16 bit
  patterns in tl.dot.
- scatter of a scalar with reduce="add": the interpreter's atomic read a broadcast value as
  contiguous memory.
"""

import pytest
import torch
from torch._inductor.utils import run_and_get_code

SPECIAL = {
    "j0": (torch.special.bessel_j0, (-12.0, 12.0)),
    "j1": (torch.special.bessel_j1, (-12.0, 12.0)),
    "y0": (torch.special.bessel_y0, (0.05, 12.0)),
    "y1": (torch.special.bessel_y1, (0.1, 12.0)),
    "i0": (torch.special.i0, (-9.0, 9.0)),
    "i1": (torch.special.i1, (-9.0, 9.0)),
    "modified_bessel_i0": (torch.special.modified_bessel_i0, (-9.0, 9.0)),
    "erfcx": (torch.special.erfcx, (-3.0, 30.0)),
}


@pytest.mark.parametrize("name", list(SPECIAL))
def test_special_functions_from_our_libdevice(name):
    fn, (lo, hi) = SPECIAL[name]
    x = torch.linspace(lo, hi, 97)
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(lambda v: fn(v) * 1.0), x.to("npu"))
    assert "libdevice." in codes[0]
    torch.testing.assert_close(out.cpu(), fn(x), atol=2e-5, rtol=2e-4)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_low_precision_baddbmm_template(dtype):
    # cause: Triton's interpreter multiplied tl.dot's bfloat16 operands as their uint16 bit
    # patterns (npu-sim's interpret_bf16_dot widens them by value), so every bf16 GEMM
    # template (default-mode small GEMMs) was wrong by orders of magnitude
    pytest.importorskip("npu_autotune.gemm_templates")  # the template candidates
    from torch._inductor.utils import fresh_cache

    torch.manual_seed(0)
    i, x, y = torch.randn(2, 3, 4).to(dtype), torch.randn(2, 3, 5).to(dtype), torch.randn(2, 5, 4).to(dtype)

    def fn(i, x, y):
        return torch.baddbmm(i, x, y, beta=0.5, alpha=2.0)

    with fresh_cache():
        torch._dynamo.reset()
        out, codes = run_and_get_code(torch.compile(fn), *(t.to("npu") for t in (i, x, y)))
    assert "tl.dot(" in codes[0]
    torch.testing.assert_close(out.cpu().float(), fn(i, x, y).float(), atol=5e-2, rtol=2e-2)


@pytest.mark.parametrize("reduce", ["add", "multiply"])
def test_scatter_of_a_scalar_with_a_reduce(reduce):
    # cause: Inductor's kernel atomically adds a value broadcast to the pointers' shape (a
    # stride-0 numpy view in Triton's interpreter), which the interpreter's C++ atomic read as
    # a contiguous buffer: garbage was added (npu-sim's interpret_atomics passes copies)
    a = torch.randn(3, 5)
    i = torch.tensor([[0, 0, 1, 1], [2, 2, 2, 3], [4, 0, 4, 4]])  # repeated: accumulates

    def fn(a, i):
        return a.scatter(1, i, 2.0, reduce=reduce) + 1

    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), a.to("npu"), i.to("npu"))
    if reduce == "add":
        assert "tl.atomic_add(" in codes[0]
    torch.testing.assert_close(out.cpu(), fn(a, i))
