"""``torch.compile(model, mode="max-autotune")`` end to end on npu-sim (issue 21's "done
when"): the reference transformer block (npu-inductor's ``reference_models.TransformerBlock``:
LayerNorm, multi-head attention, GELU MLP) and a small CNN (conv, batch norm, ReLU, pooling, linear), each equal to
eager, with npu GEMM / conv templates chosen by autotuning and epilogues fused into them.
Tiny shapes (the interpreter runs every candidate); Triton templates only, so the templates
are what the autotuner picks among (ATen's CPU kernels would win every race on npu-sim)."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

from npu_inductor.reference_models import TransformerBlock

# benchmark_epilogue_fusion off (upstream's default is on): the test asserts which kernels are fused, and with it on that is decided by timing Triton's interpreter, i.e. by this machine's speed and load
FLAGS = {
    "max_autotune_gemm_backends": "TRITON",
    "max_autotune_conv_backends": "TRITON",
    "benchmark_epilogue_fusion": False,
    "test_configs.max_mm_configs": 2,
    "triton.cudagraphs": False,
}


@pytest.fixture
def chosen():
    """(op name, chosen choice name, number of choices) of every autotuned GEMM / conv."""
    from torch._inductor.select_algorithm import add_feedback_saver, get_algorithm_selector_cache

    seen = []

    def saver(timings, name, input_nodes, choices, *_):
        best = min(timings, key=timings.get)
        seen.append((name, best.name, len(choices)))

    add_feedback_saver(saver)
    yield seen
    get_algorithm_selector_cache().feedback_saver_fns.remove(saver)


def _compile(model, x):
    torch._dynamo.reset()
    with torch.no_grad(), config.patch(FLAGS):
        out, code = run_and_get_code(
            torch.compile(model.to("npu"), mode="max-autotune"), x.to("npu")
        )
    return out.cpu(), "\n".join(code)


def _kernels(code):
    """Source of each generated Triton kernel."""
    return [k for k in code.split("@triton.jit")[1:]]


@pytest.mark.feature("B04")
def test_max_autotune_transformer_block_uses_fused_npu_gemm_templates(fresh, chosen):
    torch.manual_seed(0)
    block, x = TransformerBlock(32, 2).eval(), torch.randn(1, 8, 32)
    with torch.no_grad():
        want = block(x)
    out, code = _compile(block, x)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    # every GEMM of the block (qkv and output projections, the MLP's two linears) was tuned over
    # several npu template candidates and a template chosen
    gemms = [c for c in chosen if c[0] in ("mm", "addmm", "bmm", "baddbmm")]
    assert len(gemms) >= 4 and all(n > 1 and best.startswith("triton_") for _, best, n in gemms), (
        chosen
    )
    assert "extern_kernels.mm(" not in code and "extern_kernels.addmm(" not in code
    templates = [k for k in _kernels(code) if "tl.dot(" in k]
    assert len(templates) >= 4
    # epilogues fused: the MLP's GELU (erf) and the residual adds land in GEMM templates
    assert any("erf" in k for k in templates), "GELU not fused into the first MLP GEMM"
    fused = [
        line.split("Original ATen: [")[1]
        for line in code.splitlines()
        if "Original ATen: [" in line
    ]
    assert any(
        ("aten.addmm" in ops or "aten.mm" in ops)
        and ("aten.add," in ops or ops.endswith("aten.add]"))
        for ops in fused
    ), "no residual add fused into a GEMM"


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.pool = torch.nn.MaxPool2d(2)
        self.fc = torch.nn.Linear(8 * 4 * 4, 10)

    def forward(self, x):
        return self.fc(self.pool(torch.relu(self.bn(self.conv(x)))).flatten(1))


@pytest.mark.feature("B04")
def test_max_autotune_small_cnn_uses_fused_npu_conv_and_gemm_templates(fresh, chosen):
    torch.manual_seed(0)
    cnn, x = SmallCNN().eval(), torch.randn(2, 3, 8, 8)
    with torch.no_grad():
        cnn.bn.running_mean.uniform_(-0.5, 0.5), cnn.bn.running_var.uniform_(0.5, 2.0)
        want = cnn(x)
    out, code = _compile(cnn, x)
    torch.testing.assert_close(out, want, rtol=1e-4, atol=1e-4)
    convs = [c for c in chosen if c[0] == "convolution"]
    gemms = [c for c in chosen if c[0] in ("mm", "addmm")]
    assert convs and gemms, chosen
    assert all(best.startswith("triton_") for _, best, _ in convs + gemms), chosen
    assert "extern_kernels.convolution(" not in code and "extern_kernels.addmm(" not in code
    conv_kernels = [k for k in _kernels(code) if "tl.dot(" in k and "aten.convolution" in code]
    assert conv_kernels
    # the eval-mode batch norm and the ReLU run in the conv template's epilogue
    assert any(
        "aten.convolution, aten._native_batch_norm_legit_no_training, aten.relu" in line
        or ("aten.convolution" in line and "aten.relu" in line)
        for line in code.splitlines()
    ), code
