"""Per-program sub-block loops: on a device with few vector cores (tiling's device with 4
cores, monkeypatched), tensors many UB blocks large run with a grid of at most one program
per vector core, each program looping over UB-sized sub-blocks, and match eager."""

import dataclasses
import math

import pytest
import torch
from torch._inductor import config as inductor_config

from npu_lowering.kernel import NpuTritonKernel
from npu_lowering.runtime import grid as npu_grid
from npu_inductor_core import tiles as tiling
from npu_lowering.runtime.autotuner import LAUNCHES

pytestmark = pytest.mark.feature("B01")
CORES = 4  # the device's UB, but 4 vector cores: a block of at most 16384 f32 per program


@pytest.fixture
def small_device(monkeypatch):
    dev = dataclasses.replace(tiling.device(0), vector_cores=CORES)
    monkeypatch.setattr(tiling, "device", lambda index=0: dev)
    LAUNCHES.clear()
    # a cached graph would bring kernels generated for the real core count
    with inductor_config.patch(force_disable_caches=True):
        yield dev


def _launches():
    """(kernel name, grid, config kwargs) of the launches since the fixture started."""
    return [(name, grid, kwargs) for name, grid, kwargs, *_ in LAUNCHES]


def _programs(grid):
    return math.prod(grid)


def _assert_looped(**numels):
    """Every launch fits the cores, and the last one has an axis whose programs times its
    block do not cover it: the programs must have looped (the result was checked)."""
    launches = _launches()
    assert launches and all(_programs(grid) <= CORES for _, grid, _ in launches), launches
    name, grid, kwargs = launches[-1]
    axes = {"x": 0, "y": 1, "z": 2}
    short = [
        a for a, numel in numels.items() if grid[axes[a]] * kwargs[f"{a.upper()}BLOCK"] < numel
    ]
    assert short, (name, grid, kwargs, numels)


def test_big_pointwise_loops_over_subblocks(small_device, check):
    x = torch.randn(40, 4000, device="npu")  # 160000 elements: at least 10 blocks
    code = check(lambda a: (a.sin() * 2 + 1).relu(), x)
    assert (
        "for xsub in tl.range(" in code
        and "'grid_type': 'NpuGrid'" in code
        and "'npu_grid_axes': 1" in code
    )
    _assert_looped(x=x.numel())


def test_big_2d_pointwise_loops(small_device, check):
    x = torch.randn(600, 400, device="npu")
    code = check(lambda a: a.t().contiguous() + 1, x)
    assert (
        "for ysub in tl.range(" in code
        and "for xsub in tl.range(" in code
        and "'grid_type': 'NpuGrid'" in code
        and "'npu_grid_axes': 2" in code
    )
    _assert_looped(x=600, y=400)


def test_3d_pointwise_loops(small_device, check):
    x = torch.randn(40, 50, 60, device="npu")
    with inductor_config.patch({"triton.max_tiles": 3, "triton.prefer_nd_tiling": True}):
        code = check(lambda a: a.permute(2, 1, 0).contiguous() + 1, x)
    assert (
        all(f"for {a}sub in tl.range(" in code for a in "xyz")
        and "'grid_type': 'NpuGrid'" in code
        and "'npu_grid_axes': 3" in code
    )
    _assert_looped(x=40, y=50, z=60)


# a float32 row of 16384 does not stay whole in one core's UB: looped
@pytest.mark.parametrize("shape", [(12000, 8), (16, 16384)], ids=["persistent", "looped"])
def test_big_reduction_loops_over_row_subblocks(small_device, check, shape):
    x = torch.randn(*shape, device="npu")
    code = check(lambda a: a.sum(-1) * 2, x)
    assert "for xsub in tl.range(" in code
    assert ("triton_red_" in code) == (shape[1] > 8192)  # looped: the r loop inside the x loop
    _assert_looped(x=shape[0])


def test_softmax_loops_over_rows(small_device, check):
    x = torch.randn(200, 300, device="npu")  # persistent: at most 32 rows of 512 per block
    check(lambda a: torch.softmax(a, -1), x)
    _assert_looped(x=200)


def _triton_has_block_pointers() -> bool:
    """Triton 3.9 removed block pointers (triton-lang/triton#10833: ``tl.advance`` gone,
    ``tl.make_block_ptr`` a raising stub); torch 2.15 then treats ``triton.use_block_ptr`` as a
    no-op (``use_block_ptr_enabled``). Triton 3.8 and triton-ascend 3.2 keep them."""
    import triton.language as tl

    return hasattr(tl, "make_block_ptr") and hasattr(tl, "advance")


@pytest.mark.skipif(
    not _triton_has_block_pointers(),
    reason="this Triton has no block pointers: upstream ignores triton.use_block_ptr",
)
def test_block_pointers_inside_the_loops(small_device, check):
    """triton.use_block_ptr (upstream's flag): the block pointers are built per sub-block."""
    with inductor_config.patch({"triton.use_block_ptr": True}):
        code = check(lambda a: (a * 2 + 1, a.sum(-1)), torch.randn(64, 4096, device="npu"))
    assert "tl.make_block_ptr" in code and "for xsub in tl.range(" in code
    assert all(_programs(grid) <= CORES for _, grid, _ in _launches())


def test_int64_indexing_loops_in_int64(small_device, check, monkeypatch):
    """Tensors past 2**31 elements index in int64 (too big here: forced): the loop bounds,
    hence the sub-block index, are int64 too."""
    monkeypatch.setattr(NpuTritonKernel, "get_index_dtype_as_torch_dtype", lambda self: torch.int64)
    x = torch.randn(300, 600, device="npu")
    code = check(lambda a: (a * 2).sum(-1) + a.t().sum(-1)[:300], x)
    assert "tl.program_id(0).to(tl.int64) * xsubs_per_program" in code
    assert "tl.num_programs(0).to(tl.int64)" in code


@pytest.mark.feature("B02")
def test_dynamic_sizes_loop_with_a_capped_grid(small_device):
    torch._dynamo.reset()
    fn = torch.compile(lambda a: a * 3 + 1, dynamic=True)
    for n in (5000, 30001, 200003):
        LAUNCHES.clear()
        x = torch.randn(n, device="npu")
        torch.testing.assert_close(fn(x).cpu(), x.cpu() * 3 + 1)
        assert all(_programs(grid) <= CORES for _, grid, _ in _launches())
    _assert_looped(x=n)


def test_a_capped_grid_without_the_loop_is_wrong(small_device, monkeypatch):
    """The loop is what makes a capped grid correct: one sub-block per program (the loop
    header replaced by ``xsub = tl.program_id(0)``) with the same grid leaves most of the
    output unwritten."""

    def one_subblock_per_program(self, axes):
        for entry in axes:
            self.body.writeline(f"{entry.prefix}sub = tl.program_id({entry.grid_dim})")

    monkeypatch.setattr(NpuTritonKernel, "_open_subblock_loops", one_subblock_per_program)
    torch._dynamo.reset()
    x = torch.randn(200000, device="npu")
    out = torch.compile(lambda a: a + 1)(x).cpu()
    assert not torch.allclose(out, x.cpu() + 1)
    assert max(_programs(grid) for _, grid, _ in _launches()) <= CORES


def test_without_subblock_loops_the_grid_exceeds_the_cores(small_device, monkeypatch):
    """Switched off, kernels are upstream's: one block per program, more programs than cores."""
    monkeypatch.setattr(NpuTritonKernel, "subblock_loops", False)
    torch._dynamo.reset()
    x = torch.randn(200000, device="npu")
    torch.testing.assert_close(torch.compile(lambda a: a + 1)(x).cpu(), x.cpu() + 1)
    assert max(_programs(grid) for _, grid, _ in _launches()) > CORES


def _grid(axes, cores, meta, **numels):
    expr = npu_grid.NpuGrid(
        inductor_meta={
            npu_grid.FACTS_KEY: {"ub_bytes": 192 * 1024, "vector_cores": cores},
            npu_grid.AXES_KEY: axes,
        }
    )
    expr.generate(meta)
    return expr.eval_slow({**meta, **numels})


@pytest.mark.parametrize(
    "xnumel,expected",
    [(0, 0), (1, 1), (1024, 1), (5 * 1024, 5), (50 * 1024, 25), (48 * 1024, 48), (10**6, 47)],
)
def test_grid_is_capped_and_balanced(xnumel, expected):
    # 50 sub-blocks on 48 cores: 2 per program, so 25 programs (not 48 with 23 idle);
    # 977 sub-blocks: 21 per program, 47 programs
    assert _grid(1, 48, {"XBLOCK": 1024}, xnumel=xnumel) == (expected, 1, 1)


def test_grid_outer_axes_take_the_cores_first():
    assert _grid(2, 48, {"XBLOCK": 64, "YBLOCK": 8}, xnumel=4096, ynumel=4096) == (1, 47, 1)
    assert _grid(2, 48, {"XBLOCK": 64, "YBLOCK": 8}, xnumel=4096, ynumel=64) == (6, 8, 1)
    gx, gy, gz = _grid(
        3, 48, {"XBLOCK": 8, "YBLOCK": 8, "ZBLOCK": 8}, xnumel=800, ynumel=80, znumel=24
    )
    assert gz == 3 and gx * gy * gz <= 48


def test_grid_without_core_count_is_an_error():
    with pytest.raises(ValueError, match="npu_device_facts"):
        npu_grid.NpuGrid(inductor_meta={"kernel_name": "k", npu_grid.AXES_KEY: 1}).generate(
            {"XBLOCK": 8}
        )


def test_grid_without_axis_count_is_an_error():
    facts = {"ub_bytes": 192 * 1024, "vector_cores": 48}
    with pytest.raises(ValueError, match="npu_grid_axes"):
        npu_grid.NpuGrid(inductor_meta={"kernel_name": "k", npu_grid.FACTS_KEY: facts}).generate(
            {"XBLOCK": 8}
        )


def test_cpp_grid_expressions():
    expr = npu_grid.NpuGrid(
        inductor_meta={
            npu_grid.FACTS_KEY: {"ub_bytes": 192 * 1024, "vector_cores": 48},
            npu_grid.AXES_KEY: 2,
        },
        mode="cpp",
    )
    expr.generate({"XBLOCK": 64, "YBLOCK": 8})
    text = "\n".join([*expr.prefix, str(expr.x_grid), str(expr.y_grid)])
    assert "uint32_t y_subblocks_" in text and "std::max((long)" in text and "//" not in text
