"""Upstream's scheduler and choices flags decide npu's fusions as they decide cuda's: each
test compiles one tiny program on npu with the flag flipped and sees the fusion decision
change (kernel count), so it fails if npu's scheduling ignored the flag."""

import pytest
import torch


def _siblings(a):
    return a.sin() + 1, a.cos() * 2  # two nodes reading one input: a horizontal fusion


@pytest.mark.feature("F16")
def test_vertical_and_horizontal_fusion(compiled):
    x = torch.randn(8, 8, device="npu")
    b_used_twice = compiled(
        lambda a: (lambda b: (b, b.cos() * 2))(a.sin() + 1), x
    )  # producer -> consumer
    assert (b_used_twice.nodes, b_used_twice.kernels) == (2, 1)
    siblings = compiled(_siblings, x)
    assert (siblings.nodes, siblings.kernels) == (2, 1)
    # the same programs with fusion off (every pair over the size limit): one kernel per node
    assert compiled(_siblings, x, max_fusion_size=1).kernels == 2


@pytest.mark.feature("F01")
def test_aggressive_fusion_fuses_nodes_without_shared_data(compiled):
    x, y = torch.randn(8, 8, device="npu"), torch.randn(8, 8, device="npu")

    def unrelated(a, b):
        return a + 1, b * 2

    # score_fusion_memory_threshold=0: only aggressive_fusion stands between the two
    on = compiled(unrelated, x, y, aggressive_fusion=True, score_fusion_memory_threshold=0)
    off = compiled(unrelated, x, y, aggressive_fusion=False, score_fusion_memory_threshold=0)
    assert (on.kernels, off.kernels) == (1, 2)


@pytest.mark.feature("F08")
def test_max_fusion_buffer_group_pairwise_attempts(compiled):
    x = torch.randn(8, 8, device="npu")
    assert compiled(_siblings, x, max_fusion_buffer_group_pairwise_attempts=0).kernels == 2
    assert compiled(_siblings, x, max_fusion_buffer_group_pairwise_attempts=64).kernels == 1


@pytest.mark.feature("F09")
def test_max_fusion_size(compiled):
    x = torch.randn(8, 8, device="npu")

    def three(a):
        return a.sin() + 1, a.cos() * 2, a.exp() - 1

    assert compiled(three, x, max_fusion_size=64).kernels == 1
    assert compiled(three, x, max_fusion_size=2).kernels == 2  # two fuse, the third stays apart
    assert compiled(three, x, max_fusion_size=1).kernels == 3


@pytest.mark.feature("F10")
def test_max_fusion_unique_io_buffers(compiled):
    x, y = torch.randn(8, 8, device="npu"), torch.randn(8, 8, device="npu")

    def two(a, b):
        return a.sin() + b, a.cos() * b  # fused: 2 inputs + 2 outputs

    assert compiled(two, x, y, max_fusion_unique_io_buffers=None).kernels == 1
    assert compiled(two, x, y, max_fusion_unique_io_buffers=3).kernels == 2


@pytest.mark.feature("F11")
def test_score_fusion_memory_threshold(compiled):
    x = torch.randn(8, 8, device="npu")  # the siblings share one read: 64 float32 = 256 bytes
    assert compiled(_siblings, x, score_fusion_memory_threshold=256).kernels == 1
    assert compiled(_siblings, x, score_fusion_memory_threshold=257).kernels == 2


@pytest.mark.feature("F31")
def test_min_overlap_ratio(compiled):
    x = torch.randn(16, 8, device="npu")

    def halves(a):
        return a[:8] + 1, a[8:] * 2  # one buffer, disjoint reads: only overlap scoring pairs them

    assert compiled(halves, x, min_overlap_ratio=0.5).kernels == 1
    assert compiled(halves, x, min_overlap_ratio=1.1).kernels == 2  # upstream's default: off


@pytest.mark.feature("F14")
def test_tiling_prevents_pointwise_fusion(compiled):
    a = torch.randn(4, 16, 8, device="npu")
    b = torch.randn(4, 8, 16, device="npu")
    c = torch.randn(16, 8, 4, device="npu")

    def two_transposes(x, y, z):
        # both 2-D tiled, along different dimension splits; they share y
        return x.permute(0, 2, 1) + y, z.permute(2, 1, 0) + y

    kept_apart = compiled(
        two_transposes, a, b, c, **{"triton.tiling_prevents_pointwise_fusion": True}
    )
    fused = compiled(two_transposes, a, b, c, **{"triton.tiling_prevents_pointwise_fusion": False})
    assert (kept_apart.kernels, fused.kernels) == (2, 1)


@pytest.mark.feature("F15")
def test_tiling_prevents_reduction_fusion(compiled):
    y = torch.randn(4, 8, 16, device="npu")
    z = torch.randn(16, 8, 4, device="npu")

    def transpose_then_row_sums(a, b):
        t = b.permute(2, 1, 0) + a  # 2-D tiled (128 x 4), a tiling the row sums cannot share
        return t, t.sum(-1)

    kept_apart = compiled(
        transpose_then_row_sums, y, z, **{"triton.tiling_prevents_reduction_fusion": True}
    )
    fused = compiled(
        transpose_then_row_sums, y, z, **{"triton.tiling_prevents_reduction_fusion": False}
    )
    assert (kept_apart.kernels, fused.kernels) == (2, 1)


def _gqa_rope(q, k, cos, sin):
    """Rotary embedding of queries and of fewer key heads (grouped-query attention): two
    pointwise nodes whose loops differ in one dimension (heads), both reading cos and sin."""

    def rotate_half(x):
        return torch.cat([-x[..., 4:], x[..., :4]], -1)

    c, s = cos[None, :, None, :], sin[None, :, None, :]
    return q * c + rotate_half(q) * s, k * c + rotate_half(k) * s


def _gqa_inputs():
    return (
        torch.randn(2, 4, 4, 8, device="npu"),
        torch.randn(2, 4, 2, 8, device="npu"),
        torch.randn(4, 8, device="npu"),
        torch.randn(4, 8, device="npu"),
    )


# upstream matches an expanded node's dependencies against the other node's normalized ones;
# on a GPU-like device (npu is one) the scheduler normalizes them up front only when
# loop_ordering_after_fusion is off
_EXPAND = {"expand_dimension_for_pointwise_nodes": True, "loop_ordering_after_fusion": False}


@pytest.mark.feature("F27")
def test_expand_dimension_for_pointwise_nodes(compiled):
    expanded = compiled(_gqa_rope, *_gqa_inputs(), **_EXPAND)
    apart = compiled(
        _gqa_rope, *_gqa_inputs(), **{**_EXPAND, "expand_dimension_for_pointwise_nodes": False}
    )
    assert (expanded.kernels, apart.kernels) == (1, 2)


@pytest.mark.feature("F33")
def test_small_memory_access_threshold(compiled):
    # the nodes write 256 and 128 float32 (1 KiB, 512 B): expansion only when both are at or
    # below the threshold (bytes)
    below = compiled(_gqa_rope, *_gqa_inputs(), small_memory_access_threshold=1 << 24, **_EXPAND)
    above = compiled(_gqa_rope, *_gqa_inputs(), small_memory_access_threshold=512, **_EXPAND)
    assert (below.kernels, above.kernels) == (1, 2)
