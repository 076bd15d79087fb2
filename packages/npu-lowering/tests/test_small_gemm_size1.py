"""GEMMs with a size-1 dim (M=1 / N=1: a single token, a matrix-vector product) on npu.

They stay ATen: upstream's template indexes the operands by ``rm % M`` / ``rn % N``, a
zero-stride pointer there that triton-ascend refuses. Default mode's small-GEMM policy skips
them, and npu-autotune offers no template candidate for them under max-autotune either."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache, run_and_get_code


@pytest.fixture(autouse=True)
def tiles():
    # the template candidates come from npu-autotune (registered by importing the module)
    pytest.importorskip("npu_autotune.gemm_templates")
    with fresh_cache():
        yield
    torch._dynamo.reset()


CASES = {  # name: (fn, input shapes)
    "bmm_m1": (torch.bmm, [(2, 1, 8), (2, 8, 4)]),
    "mm_m1": (torch.mm, [(1, 8), (8, 4)]),
    "mm_n1": (torch.mm, [(4, 8), (8, 1)]),
    "addmm_m1": (torch.addmm, [(4,), (1, 8), (8, 4)]),
    "addmm_m1_bias_1xn": (lambda b, x, w: torch.addmm(b, x, w).relu(), [(1, 4), (1, 8), (8, 4)]),
    "linear_one_token": (
        lambda x, w, b: torch.nn.functional.linear(x, w, b).relu(),
        [(1, 1, 8), (4, 8), (4,)],
    ),
    "baddbmm_m1": (torch.baddbmm, [(2, 1, 4), (2, 1, 8), (2, 8, 4)]),
    "baddbmm_n1": (torch.baddbmm, [(1,), (2, 3, 8), (2, 8, 1)]),
}
ALSO = {  # no template either way: Inductor decomposes K=1 to pointwise, mv is not mm
    "mm_k1": (torch.mm, [(4, 1), (1, 4)]),
    "mv": (torch.mv, [(4, 8), (8,)]),
}
# upstream's template path, with one candidate (what small_gemm.wrap uses for other sizes)
TEMPLATE = {
    "max_autotune_gemm": True,
    "max_autotune_gemm_backends": "ATEN,TRITON",
    "test_configs.max_mm_configs": 1,
}


def compiled_code(name, cases):
    fn, shapes = cases[name]
    torch.manual_seed(0)
    inputs = [torch.randn(*s) for s in shapes]
    torch._dynamo.reset()
    out, code = run_and_get_code(torch.compile(fn), *[t.to("npu") for t in inputs])
    torch.testing.assert_close(out.cpu(), fn(*inputs), atol=1e-4, rtol=1e-4)
    return "\n".join(code)


@pytest.mark.parametrize("name", list(CASES))
def test_size1_gemms_take_no_template_even_under_max_autotune_gemm(name):
    # upstream's M=1 / N=1 template does not lower on triton-ascend (the ``rm % M`` zero
    # stride above): npu-autotune offers no template candidate for it (gemm_templates.
    # vector_gemm), so even upstream's template path leaves it to ATen, equal to eager
    with config.patch(TEMPLATE):
        assert "tl.dot(" not in compiled_code(name, CASES)


@pytest.mark.parametrize("name", ["bmm_m1", "mm_n1", "linear_one_token", "baddbmm_n1"])
def test_default_mode_keeps_size1_gemms_aten(name):
    assert "tl.dot(" not in compiled_code(name, CASES)


@pytest.mark.parametrize("name", list(ALSO))
def test_k1_and_mv_match_eager(name):
    compiled_code(name, ALSO)
