"""An npu GEMM that no template takes gets ATen even with the TRITON backend alone
(gemm_aten_fallback.py), as upstream's lowerings choose ATen where their templates cannot
apply: a Linear with one output feature (N=1) and a dynamic batch under max-autotune raised
NoValidChoicesError in tuned_addmm."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import fresh_cache, run_and_get_code

# upstream's max-autotune tests take the TRITON backend alone (e.g. test_linear_dynamic_maxautotune)
TRITON_ONLY = {
    "max_autotune": True,
    "max_autotune_gemm_backends": "TRITON",
    "test_configs.max_mm_configs": 1,
}


@pytest.fixture(autouse=True)
def fresh():
    pytest.importorskip("npu_autotune.gemm_templates")  # npu's template candidates
    torch._dynamo.reset()
    with fresh_cache():
        yield
    torch._dynamo.reset()


@pytest.mark.parametrize("dynamic", [True, False], ids=["dynamic-batch", "static"])
def test_vector_linear_under_triton_only_max_autotune(dynamic):
    torch.manual_seed(0)
    model = torch.nn.Linear(8, 1).to("npu")
    compiled = torch.compile(model)
    with torch.no_grad(), config.patch(TRITON_ONLY):
        for batch in (6, 10):
            x = torch.randn(batch, 8, device="npu")
            if dynamic:
                torch._dynamo.mark_dynamic(x, 0)
            torch.testing.assert_close(compiled(x), model(x))


def test_a_gemm_the_template_takes_keeps_only_templates():
    # ATen joins only where npu's templates offer nothing: a 16x16x16 mm stays a template
    a, b = torch.randn(16, 16, device="npu"), torch.randn(16, 16, device="npu")
    with torch.no_grad(), config.patch(TRITON_ONLY):
        out, code = run_and_get_code(torch.compile(torch.mm), a, b)
    torch.testing.assert_close(out, a @ b)
    assert "tl.dot(" in "\n".join(code) and "extern_kernels.mm" not in "\n".join(code)
