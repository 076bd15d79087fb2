"""User @triton.jit kernels called inside compiled npu graphs (L08): Dynamo puts them into
the graph (triton_kernel_wrapper_mutation), Inductor emits them with upstream's
user_autotune, and npu-lowering's kernel object launches them through npu-launcher's
pre-bound launch object, with the user's constexprs, the triton.autotune config's block
sizes (its grid lambda evaluated on that config), triton.heuristics values and the
autotuner's reset_to_zero argument. upstream's static_launch_user_defined_triton_kernels
decides, as for cuda."""

import pytest
import torch
import triton
import triton.language as tl

pytest.importorskip("npu_sim")
pytest.importorskip("npu_lowering")


@pytest.fixture(scope="module", autouse=True)
def npu():
    import npu_inductor

    npu_inductor.enable()


@pytest.fixture
def launches():
    from npu_lowering.runtime import autotuner

    torch._dynamo.reset()
    autotuner.LAUNCHES.clear()
    autotuner._static_launches.clear()  # kernel objects outlive dynamo resets; bind afresh
    return autotuner


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})],
    key=["n"],
    reset_to_zero=["total"],
)
@triton.heuristics({"EVEN": lambda args: args["n"] % args["BLOCK"] == 0})
@triton.jit
def scaled_add(x, y, out, total, n, ALPHA: tl.constexpr, BLOCK: tl.constexpr, EVEN: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    if EVEN:
        v = (tl.load(x + offs) + tl.load(y + offs)) * ALPHA
    else:
        v = (tl.load(x + offs, mask=m, other=0.0) + tl.load(y + offs, mask=m, other=0.0)) * ALPHA
    tl.store(out + offs, v, mask=m)
    tl.atomic_add(total, tl.sum(v, 0))


def model(a, b):
    out = torch.empty_like(a)
    total = torch.zeros(1, device=a.device)
    n = a.numel()
    scaled_add[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, total, n, ALPHA=3.0)
    return out.cos(), total


def run_user_kernel(launches, n=100):
    a, b = torch.randn(n), torch.randn(n)
    out, total = torch.compile(model)(a.to("npu"), b.to("npu"))
    torch.testing.assert_close(out.cpu(), ((a + b) * 3).cos(), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(total.cpu(), ((a + b) * 3).sum().reshape(1), atol=1e-4, rtol=1e-4)
    user = [entry for entry in launches.LAUNCHES if entry[0].startswith("scaled_add")]
    assert len(user) == 1
    return user[0]


@pytest.mark.feature("L08")
def test_user_kernel_launches_through_the_pre_bound_launch_object(launches):
    with torch._inductor.config.patch(static_launch_user_defined_triton_kernels=True):
        name, grid, config, triton_meta, _, heuristic, static = run_user_kernel(launches)
    assert heuristic.name == "USER_AUTOTUNE"
    assert static  # not npu-sim's entry point (the fallback) nor Triton's launcher
    assert config == {"BLOCK": 16, "EVEN": False}  # the first autotune config, with its heuristic
    assert tuple(grid)[0] == triton.cdiv(100, 16)  # the user's grid lambda on that config
    assert triton_meta["constants"]["ALPHA"] == 3.0
    bound = [
        obj
        for k, obj in launches._static_launches.items()
        if k.inductor_meta["kernel_name"] == name
    ]
    assert bound and type(bound[0]).__module__ == "npu_launcher._native"


@pytest.mark.feature("L08")
def test_heuristics_constexpr_reaches_the_launch(launches):
    # n a multiple of BLOCK: the kernel takes its EVEN branch (unmasked loads) and is still right
    with torch._inductor.config.patch(static_launch_user_defined_triton_kernels=True):
        _, _, config, *_, static = run_user_kernel(launches, n=64)
    assert static and config == {"BLOCK": 16, "EVEN": True}


def test_flag_off_falls_back_and_strict_raises(launches):
    with torch._inductor.config.patch(static_launch_user_defined_triton_kernels=False):
        *_, static = run_user_kernel(launches)
    assert not static
    torch._dynamo.reset()
    launches._static_launches.clear()
    with torch._inductor.config.patch(
        static_launch_user_defined_triton_kernels=False, strict_static_triton_launcher=True
    ):
        with pytest.raises(Exception, match="cannot be launched statically"):
            run_user_kernel(launches, n=96)


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})],
    key=["n"],
    reset_to_zero=["total"],
)
@triton.jit
def add_and_sum(x, y, out, total, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    v = tl.load(x + offs, mask=m, other=0.0) + tl.load(y + offs, mask=m, other=0.0)
    tl.store(out + offs, v, mask=m)
    tl.atomic_add(total, tl.sum(v, 0))


def add_and_sum_model(a, b):
    out = torch.empty_like(a)
    total = torch.zeros(1, device=a.device)
    n = a.numel()
    add_and_sum[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](a, b, out, total, n)
    return out * 2, total


@pytest.mark.feature("L08")
def test_configs_benchmarked_with_reset_to_zero_then_the_winner_launches_statically(launches):
    # max_autotune: the configs are benchmarked first (npu-autotune does that on npu-sim; the
    # atomic accumulates into `total` on every benchmark run, so the autotuner's reset_to_zero
    # hook must zero it before each: without it `total` comes out 26x too large), then the
    # winning config is described and launched through a launch object
    a, b = torch.randn(100), torch.randn(100)
    with torch._inductor.config.patch(
        static_launch_user_defined_triton_kernels=True, max_autotune=True
    ):
        out, total = torch.compile(add_and_sum_model)(a.to("npu"), b.to("npu"))
    torch.testing.assert_close(out.cpu(), (a + b) * 2)
    torch.testing.assert_close(total.cpu(), (a + b).sum().reshape(1), atol=1e-4, rtol=1e-4)
    (entry,) = [e for e in launches.LAUNCHES if e[0].startswith("add_and_sum")]
    assert entry[-1] and entry[2]["BLOCK"] in (16, 64)
