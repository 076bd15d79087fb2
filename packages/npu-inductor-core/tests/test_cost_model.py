"""The Ascend cost model's sanity: each property below is one the decisions it makes rely on,
and fails when its term is dropped from the model or mis-signed."""

import pytest

from npu_inductor_core.cost_model import COSTS, KernelWork, aten_op_seconds, kernel_seconds
from npu_inductor_core.device import SOC_950, UB_950, Device

B910 = Device()  # a 910B2: 48 vector cores, 24 Cube cores
D950 = Device(ub_bytes=UB_950, soc_version=SOC_950)
MB = 1 << 20


@pytest.mark.parametrize("dev", [B910, D950], ids=["910B", "950"])
def test_more_bytes_or_more_work_take_longer(dev):
    base = KernelWork(programs=48, gm_bytes=64 * MB, vector_bytes=64 * MB)
    assert kernel_seconds(base, dev) < kernel_seconds(
        KernelWork(programs=48, gm_bytes=128 * MB, vector_bytes=64 * MB), dev
    )
    heavy = KernelWork(programs=48, gm_bytes=64 * MB, vector_bytes=4096 * MB)
    assert kernel_seconds(base, dev) < kernel_seconds(heavy, dev)
    cube = KernelWork(programs=24, gm_bytes=MB, cube_macs=1e9)
    assert kernel_seconds(cube, dev) < kernel_seconds(
        KernelWork(programs=24, gm_bytes=MB, cube_macs=8e9), dev
    )


def test_a_fusion_that_removes_a_gm_round_trip_is_cheaper():
    n = 16 * MB  # bytes of x, of the intermediate and of y
    parts = kernel_seconds(KernelWork(48, gm_bytes=2 * n, vector_bytes=n), B910) * 2
    fused = kernel_seconds(KernelWork(48, gm_bytes=2 * n, vector_bytes=2 * n), B910)
    assert fused < parts


def test_a_fusion_that_overflows_into_more_passes_is_dearer():
    """A fused row too wide for the UB is read once per pass (here four), against two kernels
    that each read their input once."""
    n = 16 * MB
    parts = kernel_seconds(KernelWork(48, gm_bytes=2 * n, vector_bytes=n), B910) * 2
    fused = kernel_seconds(KernelWork(48, gm_bytes=5 * n, vector_bytes=2 * n), B910)
    assert fused > parts


def test_a_config_that_leaves_cores_idle_is_slower():
    work = dict(gm_bytes=32 * MB, vector_bytes=32 * MB)
    assert kernel_seconds(KernelWork(48, **work), B910) < kernel_seconds(
        KernelWork(8, **work), B910
    )
    # more programs than cores: waves, each with its fixed cost
    assert kernel_seconds(KernelWork(48, **work), B910) < kernel_seconds(
        KernelWork(48 * 64, **work), B910
    )


def test_a_gemm_on_the_cube_beats_the_same_gemm_on_the_vector_units():
    m = n = k = 1024
    moved = 2 * (m * k + k * n + m * n)  # bfloat16 operands and result
    cube = KernelWork(24, gm_bytes=moved, cube_macs=m * n * k)
    vector = KernelWork(48, gm_bytes=moved, vector_bytes=2 * 2 * m * n * k)  # a mul, an add
    assert kernel_seconds(cube, B910) < kernel_seconds(vector, B910)


def test_a_small_fused_kernel_beats_the_eager_ops_it_replaces():
    """Three eager ops over a decode step's 4096-wide row (aclnn's launch each) against one
    kernel: where host overhead decides speed."""
    row = 4096 * 2
    eager = sum(aten_op_seconds(2 * row, 0, B910) for _ in range(3))
    fused = kernel_seconds(KernelWork(1, gm_bytes=2 * row, vector_bytes=3 * row), B910)
    assert fused < eager / 2


def test_every_family_the_device_facts_know_has_costs():
    assert {B910.family, D950.family} <= set(COSTS)
