"""Every kernel launched on npu: blocks within the UB budget, at most one program per vector
core whatever the size (programs loop over sub-blocks), and the Ascend tiling rules (num_warps=1; the first config uses few, large programs)."""

import pytest
import torch
import torch.nn.functional as F

from npu_inductor_core import tiles as tiling
from npu_lowering.runtime.autotuner import LAUNCHES

MAX_GRID = 65535  # programs per launch an Ascend runtime accepts


def _workload():
    x = torch.randn(64, 300, device="npu")
    # big: more UB blocks than the device has vector cores (48 x 16384 f32 on a 910B)
    torch.compile(lambda a: a * 2 + 1)(torch.randn(1024, 1024, device="npu"))
    torch.compile(lambda a: a.amax(-1))(torch.randn(16384, 64, device="npu"))
    w = torch.randn(300, device="npu")
    torch.compile(lambda a: (a.sin() * 2 + 1).relu())(x)
    torch.compile(lambda a: torch.softmax(a, -1))(x)
    torch.compile(lambda a: a.sum(-1))(torch.randn(4, 20000, device="npu"))
    torch.compile(lambda a, w: F.layer_norm(a, (300,), w))(x, w)
    torch.compile(lambda a: a.t().contiguous() + 1)(x)
    torch.compile(lambda a: a.cumsum(0))(x)


def test_every_launched_kernel_fits_the_ub_and_the_grid_fits_the_device():
    torch._dynamo.reset()
    LAUNCHES.clear()
    _workload()
    assert len(LAUNCHES) >= 8
    dev = tiling.device(0)
    for name, grid, kwargs, triton_meta, size_hints, heuristic, _static in LAUNCHES:
        assert len(grid) <= 3 and all(g >= 1 for g in grid), (name, grid)
        programs = 1
        for g in grid:
            programs *= g
        assert programs <= MAX_GRID, (name, grid)
        assert programs <= dev.vector_cores, (name, grid)  # sub-block loops cover the rest
        persistent_rblock = None
        if "persistent" in str(heuristic).lower():
            persistent_rblock = tiling.next_power_of_2(size_hints.get("r0_", 1))
        if any(k.endswith("BLOCK") for k in kwargs):
            assert tiling.fits_ub(kwargs, triton_meta, dev, persistent_rblock), (name, kwargs)


def test_configs_follow_the_ascend_rules():
    meta = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}}
    dev = tiling.Device(ub_bytes=192 * 1024, vector_cores=48)
    configs = tiling.pointwise({"x": 1 << 20}, meta, dev)
    assert all(c.num_warps == 1 for c in configs)
    budget = tiling.element_budget(meta, dev)
    assert budget == 16384  # 192 KiB / 2 pointers / 4 bytes = 24576, rounded down to a power of two
    assert configs[0].kwargs["XBLOCK"] == budget  # first: the largest block the UB allows
    assert [c.kwargs["XBLOCK"] for c in configs] == sorted(
        (c.kwargs["XBLOCK"] for c in configs), reverse=True
    )
    # below the UB limit, a later config spreads the work over half to all vector cores
    spread = tiling.pointwise({"x": 1 << 16}, meta, dev)
    assert any(24 <= (1 << 16) // c.kwargs["XBLOCK"] <= 48 for c in spread[1:])
    small = tiling.pointwise({"x": 3}, meta, dev)
    assert small[0].kwargs["XBLOCK"] * 4 >= tiling.ALIGN_BYTES  # at least 32 bytes per block
    ub950 = tiling.element_budget(meta, tiling.Device(ub_bytes=256 * 1024, vector_cores=64))
    assert ub950 > budget


@pytest.mark.parametrize("rnumel,persistent", [(64, True), (8192, False)])
def test_reduction_configs_fit_the_ub(rnumel, persistent):
    meta = {
        "signature": {
            "in_ptr0": "*fp32",
            "out_ptr0": "*fp32",
            "in_ptr1": "*fp32",
            "in_ptr2": "*fp32",
        }
    }
    dev = tiling.Device()
    for c in tiling.reduction({"x": 4096, "r0_": rnumel}, meta, dev, persistent=persistent):
        assert tiling.fits_ub(c.kwargs, meta, dev, rnumel if persistent else None)
        assert ("R0_BLOCK" in c.kwargs) == (not persistent)
