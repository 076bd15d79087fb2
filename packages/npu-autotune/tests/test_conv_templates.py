"""Convolution under max-autotune on npu (A34): upstream's Triton conv template, rendered by
npu-lowering and autotuned on npu-sim, against eager. Its tile configs are still upstream's
(not Cube-aware yet, issue 21 item 2); like upstream, the template takes groups=1 and
dilation 1 only (other convs need ATEN among the backends)."""

import pytest
import torch
import torch._inductor.config
from torch._inductor import config
from torch._inductor.utils import run_and_get_code


def conv_relu(x, w, stride, padding, dilation, groups):
    return torch.relu(torch.nn.functional.conv2d(x, w, None, stride, padding, dilation, groups))


@pytest.mark.feature("A34")
@pytest.mark.parametrize("stride,padding,dilation,groups", [(1, 1, 1, 1), (2, 0, 1, 1)])
def test_conv_backends_pick_the_triton_template_or_aten(fresh, stride, padding, dilation, groups):
    torch.manual_seed(0)
    x, w = torch.randn(2, 8, 8, 8), torch.randn(16, 8 // groups, 3, 3)
    want = conv_relu(x, w, stride, padding, dilation, groups)
    codes = {}
    for backends in ("TRITON", "ATEN"):
        torch._dynamo.reset()
        # benchmark_epilogue_fusion off (upstream's default is on): the test asserts which kernels are fused, and with it on that is decided by timing Triton's interpreter, i.e. by this machine's speed and load
        with config.patch(
            max_autotune=True,
            max_autotune_conv_backends=backends,
            benchmark_epilogue_fusion=False,
            **{"test_configs.max_mm_configs": 2},
        ):
            out, code = run_and_get_code(
                torch.compile(conv_relu),
                x.to("npu"),
                w.to("npu"),
                stride,
                padding,
                dilation,
                groups,
            )
        torch.testing.assert_close(out.cpu(), want, rtol=1e-4, atol=1e-4)
        codes[backends] = "\n".join(code)
    assert "tl.dot(" in codes["TRITON"] and "extern_kernels.convolution(" not in codes["TRITON"]
    assert "extern_kernels.convolution(" in codes["ATEN"] and "tl.dot(" not in codes["ATEN"]


def conv_grads(x, w, **flags):
    """(grad x, grad w, backward code) of a compiled 3x3 conv on npu."""
    x, w = x.to("npu").requires_grad_(), w.to("npu").requires_grad_()
    compiled = torch.compile(lambda a, b: torch.nn.functional.conv2d(a, b, padding=1))
    torch._dynamo.reset()
    # benchmark_epilogue_fusion off: the backward's kernels are compared; timing the interpreter would pick them
    with config.patch(
        max_autotune=True,
        max_autotune_conv_backends="ATEN",
        benchmark_epilogue_fusion=False,
        **{"test_configs.max_mm_configs": 2},
        **flags,
    ):
        _, code = run_and_get_code(lambda: compiled(x, w).sum().backward())
    return x.grad.cpu(), w.grad.cpu(), code[-1]  # the backward graph compiles last


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "max_autotune_conv_bwd_input_backends"),
    reason=f"torch {torch.__version__} has no Inductor flag max_autotune_conv_bwd_input_backends",
)
@pytest.mark.feature("A35", "A36")
def test_conv_backward_backends_pick_triton_templates_or_aten(fresh):
    torch.manual_seed(0)
    x, w = torch.randn(2, 8, 8, 8), torch.randn(16, 8, 3, 3)
    xe, we = x.clone().requires_grad_(), w.clone().requires_grad_()
    torch.nn.functional.conv2d(xe, we, padding=1).sum().backward()
    both = dict(
        max_autotune_conv_bwd_input_backends="TRITON",
        max_autotune_conv_bwd_weight_backends="TRITON",
    )
    gx, gw, triton_code = conv_grads(x, w, **both)
    torch.testing.assert_close((gx, gw), (xe.grad, we.grad), rtol=1e-4, atol=1e-4)
    gx, gw, aten_code = conv_grads(
        x,
        w,
        max_autotune_conv_bwd_input_backends="ATEN",
        max_autotune_conv_bwd_weight_backends="ATEN",
    )
    torch.testing.assert_close((gx, gw), (xe.grad, we.grad), rtol=1e-4, atol=1e-4)
    # grad input and grad weight: two Triton templates, or ATen's kernels and none
    assert triton_code.count("tl.dot(") == 2 and "extern_kernels.convolution" not in triton_code, (
        triton_code
    )
    # cudnn.allow_tf32 (on by default) would render allow_tf32=True, which triton-ascend refuses
    assert torch.backends.cudnn.allow_tf32 and "ALLOW_TF32 : tl.constexpr = True" not in triton_code
    assert "tl.dot(" not in aten_code, aten_code
    # (one flag TRITON and the other ATEN fails in torch 2.13 on every device: upstream's
    # call_aten_dw / call_aten_dx pass out1..out3 to convolution_backward.out, whose
    # arguments are out0..out2)


@pytest.mark.feature("A34")
def test_tf32_conv_template_computes_in_float32_with_upstreams_defines(fresh, monkeypatch):
    """A conv template asked for TF32 (cudnn's fp32_precision "tf32") renders ALLOW_TF32 False
    on npu, with every other define as upstream wrote it (npu writes them from the same kwargs)."""
    from npu_lowering.template_kernel import NpuTritonTemplateKernel, template_defines

    seen = []
    init = NpuTritonTemplateKernel.__init__

    def recording(self, *args, **kwargs):
        seen.append((kwargs.get("meta"), kwargs.get("defines"), kwargs.get("index_dtype_override")))
        init(self, *args, **kwargs)

    monkeypatch.setattr(NpuTritonTemplateKernel, "__init__", recording)
    # torch's test utilities forbid setting cudnn flags outside its flags() context
    cudnn = torch.backends.cudnn
    with cudnn.flags(
        enabled=cudnn.enabled,
        benchmark=cudnn.benchmark,
        deterministic=cudnn.deterministic,
        allow_tf32=True,
        fp32_precision="tf32",
    ):
        torch.manual_seed(0)
        x, w = torch.randn(2, 8, 8, 8), torch.randn(16, 8, 3, 3)
        with config.patch(
            max_autotune=True,
            max_autotune_conv_backends="TRITON",
            benchmark_epilogue_fusion=False,  # as above: fusions are not decided by timing here
            **{"test_configs.max_mm_configs": 1},
        ):
            out, code = run_and_get_code(
                torch.compile(conv_relu), x.to("npu"), w.to("npu"), 1, 1, 1, 1
            )
    torch.testing.assert_close(out.cpu(), conv_relu(x, w, 1, 1, 1, 1), rtol=1e-4, atol=1e-4)
    code = "\n".join(code)
    assert "ALLOW_TF32 : tl.constexpr = False" in code
    assert "ALLOW_TF32 : tl.constexpr = True" not in code
    asked = [(m, d, i) for m, d, i in seen if isinstance(m, dict) and "ALLOW_TF32" in m]
    assert asked and all(str(m["ALLOW_TF32"]) == "True" for m, _, _ in asked)
    for meta, defines, index_dtype in asked:
        assert template_defines(meta, index_dtype) == defines  # upstream's text, from its kwargs
