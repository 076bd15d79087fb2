"""Convolution and the fused attention entry points on npu: forward and backward against cpu.
torch routes a PrivateUse1 convolution to convolution(_backward)_overrideable; the CUDA-style
efficient/flash attention entry points and fused_attention_overrideable have no CPU kernel."""

import pytest
import torch
import torch.nn.functional as F


def _grads(fn, inputs, device):
    xs = [t.detach().to(device).requires_grad_(t.is_floating_point()) for t in inputs]
    out = fn(*xs)
    out.backward(torch.ones_like(out) if not isinstance(out, tuple) else None)
    return out.detach().cpu(), [x.grad.cpu() for x in xs if x.requires_grad]


@pytest.mark.parametrize("case", ["conv1d", "conv2d_groups_stride", "conv3d", "conv_transpose2d"])
def test_convolution_forward_backward_matches_cpu(case):
    torch.manual_seed(0)
    if case == "conv1d":
        fn, ins = (
            lambda x, w, b: F.conv1d(x, w, b, padding=1),
            (torch.randn(2, 3, 7), torch.randn(4, 3, 3), torch.randn(4)),
        )
    elif case == "conv2d_groups_stride":
        fn = lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, dilation=1, groups=2)
        ins = (torch.randn(1, 4, 6, 6), torch.randn(6, 2, 3, 3), torch.randn(6))
    elif case == "conv3d":
        fn, ins = (
            lambda x, w, b: F.conv3d(x, w, b),
            (torch.randn(1, 2, 4, 4, 4), torch.randn(3, 2, 2, 2, 2), torch.randn(3)),
        )
    else:
        fn = lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2, groups=2, output_padding=1)
        ins = (torch.randn(1, 4, 3, 3), torch.randn(4, 3, 3, 3), torch.randn(6))
    out, grads = _grads(fn, ins, "npu")
    ref, ref_grads = _grads(fn, ins, "cpu")
    torch.testing.assert_close(out, ref)
    for g, r in zip(grads, ref_grads):  # input, weight and bias gradients
        torch.testing.assert_close(g, r)


def test_convolution_overrideable_ops_directly():
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    out = torch.ops.aten.convolution_overrideable(
        x.npu(), w.npu(), None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1
    )
    torch.testing.assert_close(out.cpu(), F.conv2d(x, w))
    go = torch.randn_like(out)
    gi, gw, gb = torch.ops.aten.convolution_backward_overrideable(
        go, x.npu(), w.npu(), [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]
    )
    rgi, rgw, rgb = torch.ops.aten.convolution_backward(
        go.cpu(), x, w, [3], [1, 1], [0, 0], [1, 1], False, [0, 0], 1, [True, True, True]
    )
    for a, b in ((gi, rgi), (gw, rgw), (gb, rgb)):
        assert a.device.type == "npu"
        torch.testing.assert_close(a.cpu(), b)


def _qkv(L=5, S=7, dtype=torch.float32):
    torch.manual_seed(0)
    return [torch.randn(2, 3, n, 8, dtype=dtype) for n in (L, S, S)]


def _math_attention(q, k, v, bias=None, is_causal=False):
    if bias is not None and is_causal:  # the math op takes one or the other
        causal = torch.ones(q.shape[2], k.shape[2], dtype=torch.bool).triu(1)
        bias, is_causal = bias.masked_fill(causal, float("-inf")), False
    return torch.ops.aten._scaled_dot_product_attention_math(q, k, v, bias, 0.0, is_causal)[0]


@pytest.mark.parametrize("is_causal", [False, True])
def test_sdpa_forward_backward_matches_cpu(is_causal):
    q, k, v = _qkv()
    fn = lambda q, k, v: F.scaled_dot_product_attention(q, k, v, is_causal=is_causal)
    out, grads = _grads(fn, (q, k, v), "npu")
    ref, ref_grads = _grads(fn, (q, k, v), "cpu")
    torch.testing.assert_close(out, ref)
    for g, r in zip(grads, ref_grads):
        torch.testing.assert_close(g, r, atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("entry", ["efficient", "flash", "overrideable"])
@pytest.mark.parametrize("is_causal", [False, True])
def test_fused_attention_entry_points_forward_backward(entry, is_causal):
    q, k, v = _qkv()
    bias = torch.randn(2, 3, 5, 7) if entry != "flash" else None
    ops = torch.ops.aten

    def run(q, k, v, bias):
        if entry == "efficient":
            out, lse = ops._scaled_dot_product_efficient_attention(
                q, k, v, bias, True, 0.0, is_causal
            )[:2]
            assert (
                lse.shape == (2, 3, 32) and lse.dtype == torch.float32
            )  # padded to 32, as its meta kernel
        elif entry == "flash":
            out, lse = ops._scaled_dot_product_flash_attention(q, k, v, 0.0, is_causal)[:2]
            assert lse.shape == (2, 3, 5)
        else:
            out, lse = ops._scaled_dot_product_fused_attention_overrideable(
                q, k, v, bias, 0.0, is_causal
            )[:2]
        return out

    ins = [q, k, v] + ([bias] if bias is not None else [])
    xs = [t.npu().requires_grad_() for t in ins]
    out = run(*xs[:3], xs[3] if bias is not None else None)
    assert out.device.type == "npu"
    grad_out = torch.randn(out.shape)
    out.backward(grad_out.npu())
    rs = [t.clone().requires_grad_() for t in ins]
    ref = _math_attention(*rs[:3], rs[3] if bias is not None else None, is_causal=is_causal)
    ref.backward(grad_out)
    torch.testing.assert_close(out.detach().cpu(), ref.detach(), atol=1e-5, rtol=1e-4)
    for x, r in zip(xs, rs):  # q, k, v and the bias gradients
        torch.testing.assert_close(x.grad.cpu(), r.grad, atol=1e-5, rtol=1e-4)


def test_fused_attention_with_dropout_names_the_op():
    q, k, v = (t.npu() for t in _qkv())
    with pytest.raises(
        RuntimeError, match="_scaled_dot_product_efficient_attention with dropout_p"
    ):
        torch.ops.aten._scaled_dot_product_efficient_attention(q, k, v, None, True, 0.5)


def test_conv_and_sdpa_under_aot_eager():
    x, w = torch.randn(1, 2, 5, 5), torch.randn(3, 2, 3, 3)
    q, k, v = _qkv()

    def fn(x, w, q, k, v):
        return F.conv2d(x, w, padding=1).sum() + F.scaled_dot_product_attention(q, k, v).sum()

    out = torch.compile(fn, backend="aot_eager", fullgraph=True)(
        *(t.npu() for t in (x, w, q, k, v))
    )
    torch.testing.assert_close(out.cpu(), fn(x, w, q, k, v))
