"""Upstream's loop-order flags (which let nodes with differently ordered loops fuse) decide
npu's fusions as they decide cuda's: flag flipped, decision changed."""

import pytest
import torch

# each test turns off the other loop rewrites that could fuse its pair, to see only its own
_NO_REWRITES = {
    "loop_ordering_after_fusion": False,
    "loop_index_inversion_in_fusion": False,
    "loop_reindexing_after_fusion": False,
}


def _rewrites_but(name: str, value: bool) -> dict:
    return {**_NO_REWRITES, name: value}


@pytest.mark.feature("F06")
def test_loop_ordering_after_fusion(compiled):
    x = torch.randn(16, 8, device="npu")

    def transposed_sum(a):
        b = a + 1
        return b, b.t().sum(1)  # the reduction iterates b in the other order

    on = compiled(transposed_sum, x, loop_ordering_after_fusion=True)
    off = compiled(transposed_sum, x, loop_ordering_after_fusion=False)
    assert (on.kernels, off.kernels) == (1, 2)


@pytest.mark.feature("F07")
def test_loop_reindexing_after_fusion(compiled):
    x, y = torch.randn(16, 8, device="npu"), torch.randn(16, 8, device="npu")

    def row_sums_spread(a, c):
        r = a.sum(1)
        return r, r.repeat_interleave(8) + c.view(-1)  # reads r[x // 8] over the flat range

    on = compiled(row_sums_spread, x, y, loop_reindexing_after_fusion=True)
    off = compiled(row_sums_spread, x, y, loop_reindexing_after_fusion=False)
    assert (on.kernels, off.kernels) == (1, 2)


@pytest.mark.feature("F32")
def test_pick_loop_orders(compiled):
    x = torch.randn(8, 8, device="npu")

    def straight_and_transposed(a):
        return a + 1, a.t() * 2  # fusable when the second node's loops follow a's strides

    on = compiled(straight_and_transposed, x, pick_loop_orders=True, **_NO_REWRITES)
    off = compiled(straight_and_transposed, x, pick_loop_orders=False, **_NO_REWRITES)
    assert (on.kernels, off.kernels) == (1, 2)


@pytest.mark.feature("F05")
def test_loop_index_inversion_in_fusion(compiled):
    x = torch.randn(16, 256, device="npu")

    def swizzled_block_max(a):
        # per-block max (a reduction), then a reshape-permute-reshape of its result: the
        # consumer reads it through an index only inversion can map onto the producer's
        scale = a.reshape(16, 16, 16).abs().amax(dim=-1)  # [16, 16]
        return scale.reshape(2, 8, 4, 4).permute(0, 2, 1, 3).contiguous().reshape(-1) + 1.0

    on = compiled(swizzled_block_max, x, loop_index_inversion_in_fusion=True)
    off = compiled(swizzled_block_max, x, loop_index_inversion_in_fusion=False)
    assert (on.kernels, off.kernels) == (1, 2)
