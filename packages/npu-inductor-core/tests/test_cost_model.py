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


def test_a_950_is_priced_by_its_own_row():
    """The 950PR's published figures (README's table): its vector units do twice the 910B's
    bytes per cycle at a lower clock, so vector-bound work is faster there and Cube-bound
    work (the same MACs per cycle) slower; a kernel whose device facts say 950 gets them."""
    from npu_inductor_core.cost_model import work_of
    from npu_inductor_core.device import FACTS_KEY, device_for

    assert COSTS["950"] != COSTS["910B"]
    vector = KernelWork(48, gm_bytes=MB, vector_bytes=4096 * MB)
    ratio = kernel_seconds(vector, B910) / kernel_seconds(vector, D950)
    assert 1.7 < ratio < 1.9  # 512 B x 1.65 GHz against 256 B x 1.8 GHz
    cube = KernelWork(24, gm_bytes=MB, cube_macs=1e12)
    assert kernel_seconds(cube, D950) > kernel_seconds(cube, B910)

    rec = {"gm_bytes": MB, "vector_ops": 64, "numel": 1 << 24}
    meta = {"npu_work": rec, FACTS_KEY: {**D950.record(), "vector_cores": 48}}
    dev = device_for(meta)
    assert dev.family == "950"
    on_950 = kernel_seconds(work_of(meta, 48, dev), dev)
    on_910 = kernel_seconds(work_of(meta, 48, B910), B910)
    assert on_950 < on_910 / 1.7


def test_transcendentals_cost_more_than_adds():
    """Element classes: a vector-bound kernel of composite operations (tanh: several Ascend C
    instructions) takes longer than one of special ones (exp), which takes longer than adds."""
    from npu_inductor_core.cost_model import element_classes, work_of

    assert element_classes(
        ["tmp1 = tmp0 + tmp2", "x0 = xindex // 4", "tmp3 = tmp1 / tmp0", "tmp4 = tl_math.exp(tmp3)"]
    ) == {"special_ops": 2, "composite_ops": 0}
    assert element_classes(["tmp5 = libdevice.tanh(tmp4)"]) == {
        "special_ops": 0,
        "composite_ops": 1,
    }

    def seconds(**classes):
        rec = {"gm_bytes": 1024, "vector_ops": 4, "numel": 1 << 24, **classes}
        return kernel_seconds(work_of({"npu_work": rec}, 48, B910), B910)

    assert seconds() < seconds(special_ops=1) < seconds(composite_ops=1)


def test_vector_statements_are_priced_by_their_dtype():
    """A record's ``dtype_ops`` price each statement by its operands' width: float16 half of
    float32, int8 and bool a quarter, int64 two int32 operations; statements of no counted
    dtype, and every statement of a record without the field, as float32 (as before)."""
    from npu_inductor_core.cost_model import work_of

    def vector_bytes(**dtype_ops):
        rec = {"gm_bytes": 1024, "vector_ops": 4, "numel": 1 << 20, "composite_ops": 1}
        if dtype_ops:
            rec["dtype_ops"] = dtype_ops
        return work_of({"npu_work": rec}, 48, B910).vector_bytes

    single = vector_bytes()
    assert single == (4 + 7) * (1 << 20) * 4  # an older record: float32 operands
    assert vector_bytes(float32=4) == vector_bytes(int32=4) == single
    assert vector_bytes(float16=4) == vector_bytes(bfloat16=4) == single / 2
    assert vector_bytes(int8=4) == vector_bytes(bool=4) == single / 4
    assert vector_bytes(int64=4) == 2 * vector_bytes(int32=4)
    assert vector_bytes(float16=2) == vector_bytes(float16=2, float32=2) == single * 3 / 4
    rec = {"gm_bytes": MB, "vector_ops": 64, "numel": 1 << 24}
    slow = kernel_seconds(
        work_of({"npu_work": {**rec, "dtype_ops": {"int64": 64}}}, 48, B910), B910
    )
    fast = kernel_seconds(
        work_of({"npu_work": {**rec, "dtype_ops": {"int32": 64}}}, 48, B910), B910
    )
    assert slow > 1.5 * fast


def test_the_cube_runs_float32_slower_than_float16():
    from npu_inductor_core.cost_model import work_of

    rec = {"gm_bytes": MB, "macs": 1e10}
    half = kernel_seconds(work_of({"npu_work": rec}, 24, B910), B910)
    single = kernel_seconds(work_of({"npu_work": {**rec, "fp32_macs": True}}, 24, B910), B910)
    assert single > 2 * half
    assert aten_op_seconds(MB, 1e12, B910, fp32=True) > 2 * aten_op_seconds(MB, 1e12, B910)


@pytest.mark.parametrize("dev", [B910, D950], ids=["910B", "950"])
def test_a_small_gemm_is_faster_as_a_template_a_large_one_through_aclnn(dev):
    """Default mode's choice per GEMM: the template saves aclnn's two-phase launch, which a
    small GEMM's device time cannot make up for; a large one runs at the whole device's rates
    through aclnn, where the template's tiles re-read their operands."""
    from npu_inductor_core.cost_model import gemm_seconds

    template, aten = gemm_seconds(1, 64, 64, 64, 2, (64, 64, 64), dev)
    assert template < aten
    template, aten = gemm_seconds(1, 4096, 4096, 4096, 2, (64, 64, 64), dev)
    assert aten < template
    # float32 halves nothing for aclnn's launch but slows the Cube: the crossover comes earlier
    t16, a16 = gemm_seconds(1, 512, 512, 512, 2, (64, 64, 64), dev)
    t32, a32 = gemm_seconds(1, 512, 512, 512, 4, (64, 64, 64), dev)
    assert t32 / a32 > t16 / a16


def test_an_eager_float32_gemm_is_priced_at_the_cubes_float32_rate():
    """ATen ops priced by ``estimated_run``: a float32 GEMM big enough to be Cube-bound takes
    longer on the device than the same GEMM in bfloat16."""
    import torch

    pytest.importorskip("npu_sim")
    from npu_inductor.components import enable

    from npu_inductor_core.estimated_run import estimate_call

    enable()
    a = torch.randn(1024, 1024, device="npu")
    launch = COSTS[B910.family].aclnn_launch_s
    single = estimate_call(lambda: a @ a).seconds - launch
    half = a.to(torch.bfloat16)
    assert single > 2 * (estimate_call(lambda: half @ half).seconds - launch)
