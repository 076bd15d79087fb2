"""Ascend compiler rules every config generator obeys."""

from __future__ import annotations

from types import SimpleNamespace

from npu_inductor_core.ascend_rules import INDIRECT_KEY, without_one_row_indirect


def _cfgs(*xblocks):
    return [SimpleNamespace(kwargs={"XBLOCK": x}) for x in xblocks]


def _x(cfgs):
    return [c.kwargs["XBLOCK"] for c in cfgs]


def test_indirect_kernels_lose_their_one_row_blocks():
    marked = {INDIRECT_KEY: True}
    assert _x(without_one_row_indirect(_cfgs(16, 1, 4), {"x": 16, "r0_": 32}, marked)) == [16, 4]
    # unmarked kernels, one-row axes and a lone XBLOCK=1 keep their configs
    assert _x(without_one_row_indirect(_cfgs(16, 1), {"x": 16}, {})) == [16, 1]
    assert _x(without_one_row_indirect(_cfgs(16, 1), {"x": 16}, None)) == [16, 1]
    assert _x(without_one_row_indirect(_cfgs(1), {"x": 1}, marked)) == [1]
    assert _x(without_one_row_indirect(_cfgs(1), {"x": 16}, marked)) == [1]


def test_a_combo_kernel_marked_in_its_grid_meta_gets_no_one_row_block():
    """A combo kernel's inductor_meta carries npu's marks inside ``combo_grid_meta`` (the one
    per-kernel meta upstream lets a combo kernel write): the rule reads them there too."""
    from npu_inductor_core.ascend_rules import indirect

    combo = {"combo_grid_meta": {INDIRECT_KEY: True, "num_kernels": 2}}
    assert indirect(combo) and not indirect({"combo_grid_meta": {"num_kernels": 2}})
    assert _x(without_one_row_indirect(_cfgs(8, 1), {"x": 64}, combo)) == [8]
