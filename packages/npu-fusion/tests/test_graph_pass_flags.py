"""Upstream's graph-level fusion flags (batch / group fusion passes, split reductions, cat
lowering) hold on npu: flag flipped, npu's kernels or scheduler nodes change.

``batch_fusion`` and ``group_fusion`` are deprecated in torch 2.11/2.13 (read by nothing);
their successors are the passes named in ``pre_grad_fusion_options`` /
``post_grad_fusion_options``, which these tests flip."""

import pytest
import torch
from torch._dynamo.utils import counters


def _three(device="npu"):
    return tuple(torch.randn(4, 8, device=device) for _ in range(3))


@pytest.mark.feature("F02")
def test_batch_fusion_pre_grad(compiled):
    def tanhs(a, b, c):
        return torch.tanh(a), torch.tanh(b), torch.tanh(c)

    counters.clear()
    on = compiled(
        tanhs, *_three(), pre_grad_fusion_options={"batch_tanh": {"min_fuse_set_size": 2}}
    )
    assert counters["inductor"]["batch_tanh"] == 1
    off = compiled(tanhs, *_three(), pre_grad_fusion_options={})
    assert (on.nodes, off.nodes) == (1, 3)  # one stacked tanh instead of three


@pytest.mark.feature("F03")
def test_batch_fusion_of_small_ops_post_grad(compiled):
    def adds(a, b, c):
        return a + b, b + c, c + a

    counters.clear()
    on = compiled(
        adds, *_three(), post_grad_fusion_options={"batch_aten_add": {"min_fuse_set_size": 2}}
    )
    assert counters["inductor"]["batch_aten_add"] == 1
    off = compiled(adds, *_three(), post_grad_fusion_options={})
    assert (on.nodes, on.stores, off.nodes, off.stores) == (1, 1, 3, 3)


@pytest.mark.feature("F04")
def test_group_fusion(compiled):
    from torch._inductor.fx_passes import group_batch_fusion

    if not group_batch_fusion.has_fbgemm:
        pytest.skip(
            "upstream's only group fusion (group_linear) lowers to fbgemm.gmm; fbgemm is not installed"
        )
    x, w1, w2 = (
        torch.randn(4, 8, device="npu"),
        torch.randn(8, 8, device="npu"),
        torch.randn(8, 8, device="npu"),
    )

    def two_mm(a, b, c):
        return a @ b, a @ c

    counters.clear()
    compiled(
        two_mm,
        x,
        w1,
        w2,
        post_grad_fusion_options={"group_linear": {"require_fbgemm": True, "min_fuse_set_size": 2}},
    )
    assert counters["inductor"]["group_linear"] == 1


@pytest.mark.feature("F12", "F13")
def test_split_reductions(compiled):
    x = torch.randn(1 << 16, device="npu")  # one output, many elements: split for parallelism
    split = compiled(torch.sum, x, split_reductions=True)
    whole = compiled(torch.sum, x, split_reductions=False)
    assert (split.kernels, whole.kernels) == (2, 1)  # partial sums, then their sum


@pytest.mark.feature("F30")
def test_min_num_split(compiled):
    from torch._inductor import config
    from torch._inductor.utils import fresh_cache, run_and_get_code

    x = torch.randn(1 << 16, device="npu")  # wider than one core's UB: npu splits it

    def partials(min_num_split):
        torch._dynamo.reset()
        with fresh_cache(), config.patch(min_num_split=min_num_split):
            out, (code, *_) = run_and_get_code(torch.compile(torch.sum, dynamic=True), x)
        torch.testing.assert_close(out.cpu(), x.cpu().sum(), rtol=1e-4, atol=1e-3)
        return code

    # only dynamic reductions obey it: the partial-sum buffer has max(split, min_num_split) rows
    assert "empty_strided((512, )" in partials(512)
    assert "empty_strided((512, )" not in partials(0)


def _cat_of(op):
    def fn(*xs):
        return torch.cat([op(v) for v in xs]) * 2  # the cat's user is pointwise

    return fn


@pytest.mark.feature("F28")
def test_max_complex_pointwise_cat_inputs(compiled):
    xs = tuple(torch.randn(4, 4, device="npu") for _ in range(4))
    fn = _cat_of(lambda v: v.sin() * v.cos() + v.exp())
    pointwise = compiled(
        fn, *xs, max_complex_pointwise_cat_inputs=8
    )  # the cat is one pointwise node
    copied = compiled(
        fn, *xs, max_complex_pointwise_cat_inputs=1
    )  # each input computed, then copied
    assert (pointwise.kernels, pointwise.nodes) == (1, 2)
    assert copied.nodes > pointwise.nodes


@pytest.mark.feature("F29")
def test_max_pointwise_cat_inputs(compiled):
    xs = tuple(torch.randn(4, 4, device="npu") for _ in range(4))
    fn = _cat_of(torch.sin)  # simple inputs: max_pointwise_cat_inputs applies
    pointwise = compiled(fn, *xs, max_complex_pointwise_cat_inputs=1, max_pointwise_cat_inputs=8)
    copied = compiled(fn, *xs, max_complex_pointwise_cat_inputs=1, max_pointwise_cat_inputs=2)
    assert (pointwise.kernels, pointwise.nodes) == (1, 2)
    assert copied.nodes > pointwise.nodes


@pytest.mark.feature("F26")
def test_selective_decomposition_as_on_cpu(compiled):
    """``selective_decompose`` (with ``fallback_by_default``: upstream's lite mode) keeps ops
    outside regions annotated for Inductor undecomposed, as ATen calls. On npu the flag moves
    the same ops between ATen and generated kernels as it does on cpu."""
    import re

    from torch.fx import traceback as fx_traceback

    def norms(a, w):
        with fx_traceback.annotate({"compile_with_inductor": 0}):
            y = torch.nn.functional.layer_norm(a, (16,), w) * 2
        return torch.nn.functional.layer_norm(y, (16,), w) + 1

    x, w = torch.randn(4, 16, device="npu"), torch.randn(16, device="npu")
    kernels = {}
    for selective in (True, False):
        flags = {"fallback_by_default": True, "selective_decompose": selective}
        npu = compiled(norms, x, w, **flags)
        cpu = compiled(norms, x.cpu(), w.cpu(), **flags)
        cpu_kernels = len(set(re.findall(r"cpp_fused_\w+", cpu.code)))
        assert npu.kernels == cpu_kernels
        kernels[selective] = npu.kernels
    assert kernels[True] < kernels[False]  # undecomposed: fewer generated kernels
