"""Small-GEMM templates whose output has a size-1 dim (M=1 / N=1, a single token): the
epilogue's store index lacks that dim's template index, yet the store must keep the full
tile's pointer (issue 16: "Expected pointer argument to have shape [16,16] but got [1,16]")."""

import pytest
import torch
from torch._inductor.utils import fresh_cache, run_and_get_code


@pytest.fixture(autouse=True)
def tiles():
    # the template candidates come from npu-autotune (registered by importing the module)
    pytest.importorskip("npu_autotune.gemm_templates")
    with fresh_cache():
        yield
    torch._dynamo.reset()



CASES = {  # name: (fn, input shapes); K=1 is Inductor's pointwise decomposition, no template
    "bmm_m1": (torch.bmm, [(2, 1, 8), (2, 8, 4)]),
    "mm_m1": (torch.mm, [(1, 8), (8, 4)]),
    "mm_n1": (torch.mm, [(4, 8), (8, 1)]),
    "mm_k1": (torch.mm, [(4, 1), (1, 4)]),
    "addmm_m1": (torch.addmm, [(4,), (1, 8), (8, 4)]),
    "addmm_m1_bias_1xn": (lambda b, x, w: torch.addmm(b, x, w).relu(), [(1, 4), (1, 8), (8, 4)]),
    "linear_one_token": (lambda x, w, b: torch.nn.functional.linear(x, w, b).relu(),
                         [(1, 1, 8), (4, 8), (4,)]),
    "baddbmm_m1": (torch.baddbmm, [(2, 1, 4), (2, 1, 8), (2, 8, 4)]),
    "baddbmm_n1": (torch.baddbmm, [(1,), (2, 3, 8), (2, 8, 1)]),
}


@pytest.mark.parametrize("name", list(CASES))
def test_size1_gemm_template_matches_eager(name):
    fn, shapes = CASES[name]
    torch.manual_seed(0)
    inputs = [torch.randn(*s) for s in shapes]
    torch._dynamo.reset()
    out, code = run_and_get_code(torch.compile(fn), *[t.to("npu") for t in inputs])
    code = "\n".join(code)
    assert ("tl.dot(" in code) == (name != "mm_k1"), "expected the small-GEMM template"
    torch.testing.assert_close(out.cpu(), fn(*inputs), atol=1e-4, rtol=1e-4)


def test_mv_matches_eager():
    torch.manual_seed(0)
    a, v = torch.randn(4, 8), torch.randn(8)
    torch._dynamo.reset()
    out = torch.compile(torch.mv)(a.to("npu"), v.to("npu"))
    torch.testing.assert_close(out.cpu(), torch.mv(a, v), atol=1e-4, rtol=1e-4)
