"""Two concatenated halves that read a common tensor (RoPE's rotated half) are computed over the
full width on npu (``npu_fusion.config.half_cat``, half_cat.py): no load at a negative offset,
which triton-ascend's front end refuses, and bit for bit the values upstream's cat computes
(both differ from eager only by the norm's reduction order). CI's Ascend check compiles these
tests' kernels for both SoCs."""

import re

import pytest
import torch

import npu_fusion.config as fusion_config

# A load whose offset has a negative constant term, as Inductor prints a cat's second half.
NEGATIVE_OFFSET = re.compile(r"tl\.load\([^\n]*\(-\d+\)")


def rotate_half(x):
    """Hugging Face's Llama / Qwen form."""
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def hf_rope(x, w, freqs):
    emb = torch.cat((freqs, freqs), dim=-1)
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    return y * emb.cos() + rotate_half(y) * emb.sin()


def vllm_rope(x, w, cos, sin):
    """vLLM's neox form, cos / sin half-wide rows."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    y1, y2 = y.chunk(2, -1)
    return torch.cat((y1 * cos - y2 * sin, y2 * cos + y1 * sin), -1)


def _upstream_cat():
    """The control: upstream's cat, whose loads at a negative offset triton-ascend refuses, so
    its kernels stay out of CI's Ascend check (which checks every other kernel here)."""
    import contextlib

    import npu_lowering.config as lowering

    stack = contextlib.ExitStack()
    stack.enter_context(fusion_config.patch(half_cat=False))
    stack.enter_context(lowering.patch(save_kernels=None))
    return stack


def _compiled_code(fn, *args):
    from torch._inductor.utils import fresh_cache, run_and_get_code

    torch._dynamo.reset()
    with fresh_cache():
        got, codes = run_and_get_code(torch.compile(fn), *args)
    return got, "\n".join(codes)


def _inputs(tokens=5, heads=3, dim=16):
    torch.manual_seed(0)
    x = torch.randn(tokens, heads, dim, device="npu")
    w = torch.randn(dim, device="npu")
    freqs = torch.randn(tokens, 1, dim // 2, device="npu")
    return x, w, freqs


@pytest.mark.parametrize("form", ["hf", "vllm"])
def test_rope_has_no_negative_offset_and_equals_eager(form):
    x, w, freqs = _inputs()
    if form == "hf":
        fn, args = hf_rope, (x, w, freqs)
    else:
        fn, args = vllm_rope, (x, w, freqs.cos(), freqs.sin())
    with torch.no_grad():
        got, code = _compiled_code(fn, *args)
        with _upstream_cat():
            upstream, upstream_code = _compiled_code(fn, *args)
        want = fn(*args)
    assert not NEGATIVE_OFFSET.search(code), code
    assert NEGATIVE_OFFSET.search(upstream_code), upstream_code  # the control
    assert "% 8" in code  # the half-wide inputs read at j % h
    torch.testing.assert_close(got, upstream, rtol=0, atol=0)
    torch.testing.assert_close(got, want)


def test_unrelated_halves_stay_a_cat():
    """Halves that share no input would each be read twice over the full width: not rewritten."""
    a, b = torch.randn(4, 8, device="npu"), torch.randn(4, 8, device="npu")
    with torch.no_grad():
        got, code = _compiled_code(lambda a, b: torch.cat([a.exp(), b.sin()], -1), a, b)
    assert NEGATIVE_OFFSET.search(code), code
    torch.testing.assert_close(got, torch.cat([a.exp(), b.sin()], -1))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_other_dim_and_dtypes(dtype):
    """A cat along a middle dim (size-1 dims around it), in float32, bfloat16 and float64
    (lowered as the device's ATen ops, where computing the halves over the full width would
    only add ATen ops: left a cat)."""
    x = torch.randn(2, 8, 1, 3, device="npu", dtype=dtype)

    def fn(x):
        x1, x2 = x.chunk(2, 1)
        return torch.cat((x1 * 2 - x2, x2 + x1 * 0.5), 1) + 1

    with torch.no_grad():
        got, code = _compiled_code(fn, x)
        with _upstream_cat():
            upstream, _ = _compiled_code(fn, x)
    torch.testing.assert_close(got, upstream, rtol=0, atol=0)
    # float64 stays one ATen cat (the dtype policy leaves it to ATen before this pass runs)
    assert ("aten.cat.default(" in code) == (dtype == torch.float64), code
    if dtype != torch.bfloat16:  # eager rounds bfloat16 between ops, Inductor does not
        torch.testing.assert_close(got, fn(x))


def test_training_step_matches_eager():
    """Forward and backward (the backward's gradient of a chunk is itself a cat of halves)."""
    x, w, freqs = _inputs()
    cos, sin = freqs.cos(), freqs.sin()
    xc, wc = x.clone().requires_grad_(), w.clone().requires_grad_()
    xe, we = x.clone().requires_grad_(), w.clone().requires_grad_()
    torch._dynamo.reset()
    torch.compile(vllm_rope)(xc, wc, cos, sin).square().sum().backward()
    vllm_rope(xe, we, cos, sin).square().sum().backward()
    torch.testing.assert_close(xc.grad, xe.grad)
    torch.testing.assert_close(wc.grad, we.grad)


def test_cpu_graph_is_not_rewritten():
    """The pass belongs to npu's post-grad pass: a cpu compile keeps upstream's cat."""
    x = torch.randn(4, 16)
    with torch.no_grad():
        _, code = _compiled_code(lambda x: rotate_half(x) * 2, x)
    assert "% 8" not in code
