"""Direct launch (issue 5, per-call time): the generated wrapper calls npu kernels' pre-bound
launch objects itself once a kernel has settled on one config (npu-lowering's
``direct_launch``), with upstream's flags still steering it."""

import pytest
import torch
import torch._inductor.config

pytest.importorskip("npu_sim")
pytest.importorskip("npu_lowering")


@pytest.fixture(scope="module", autouse=True)
def npu():
    import npu_inductor

    npu_inductor.enable()


@pytest.fixture
def state():
    """Fresh compiles; LAUNCHES grows by one per kernel call that goes through ``run``."""
    from torch._inductor.utils import fresh_cache

    from npu_lowering.runtime import autotuner
    from npu_lowering.runtime.direct_launch import PROMOTED

    torch._dynamo.reset()
    autotuner.LAUNCHES.clear()
    autotuner._static_launches.clear()  # kernel objects outlive dynamo resets; bind afresh
    PROMOTED.clear()
    with fresh_cache():
        yield autotuner, PROMOTED
    torch._dynamo.reset()


def _fn(a):
    return torch.softmax(a.sin(), -1) * 2


def _compile(fn, x):
    from torch._inductor.utils import run_and_get_code

    compiled = torch.compile(fn)
    out, (code,) = run_and_get_code(compiled, x)
    return compiled, out, code[code.index("def call") :]


def _check(out, fn, x):
    torch.testing.assert_close(out.cpu(), fn(x.cpu()), atol=1e-5, rtol=1e-5)


@pytest.mark.feature("L02")
def test_wrapper_calls_launch_objects_directly_after_the_first_run(state):
    autotuner, promoted = state
    x = torch.randn(16, 48, device="npu")
    compiled, out, code = _compile(_fn, x)
    _check(out, _fn, x)
    assert "_npu_dl[0](" in code and ".run(" not in code  # the wrapper calls the slot
    assert len(autotuner.LAUNCHES) == 1  # first call: through run (precompile, autotune)
    ((name, grid, launch, slot),) = promoted
    assert launch is next(iter(autotuner._static_launches.values()))  # the kernel's launch object
    # the slot is npu-launcher's native grid slot over it: the grid validated once, one C call
    assert type(slot).__name__ == "GridSlot" and slot.launch is launch and slot.grid == grid
    assert slot.ignore_trailing == 0
    for _ in range(3):
        y = torch.randn(16, 48, device="npu")
        _check(compiled(y), _fn, y)  # new inputs: the launch object really ran the kernel
    assert len(autotuner.LAUNCHES) == 1  # no call went through run again


@pytest.mark.feature("L02")
def test_gemm_template_slots_drop_the_grid_arguments_natively(state):
    # a small GEMM lowers to a template (npu's default); its call passes the fixed grid as
    # trailing literals, which the native slot ignores instead of a Python frame
    autotuner, promoted = state
    fn = lambda a, b: torch.relu(a @ b) + 1  # noqa: E731
    a, b = torch.randn(32, 48, device="npu"), torch.randn(48, 16, device="npu")
    compiled = torch.compile(fn)
    torch.testing.assert_close(compiled(a, b).cpu(), fn(a.cpu(), b.cpu()), atol=1e-4, rtol=1e-4)
    templates = [p for p in promoted if "_tem_" in p[0]]
    assert templates, promoted
    for _name, _grid, launch, slot in templates:
        assert (
            type(slot).__name__ == "GridSlot"
            and slot.launch is launch
            and slot.ignore_trailing >= 1
        )
    for _ in range(2):  # later calls: through the slots, on new inputs
        a, b = torch.randn(32, 48, device="npu"), torch.randn(48, 16, device="npu")
        torch.testing.assert_close(compiled(a, b).cpu(), fn(a.cpu(), b.cpu()), atol=1e-4, rtol=1e-4)


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "use_fast_triton_launcher"),
    reason=f"torch {torch.__version__} has no Inductor flag use_fast_triton_launcher",
)
def test_use_fast_triton_launcher_off_keeps_run(state):
    autotuner, promoted = state
    x = torch.randn(16, 48, device="npu")
    with torch._inductor.config.patch(use_fast_triton_launcher=False):
        compiled, out, code = _compile(_fn, x)
        compiled(x)
    _check(out, _fn, x)
    assert "_npu_dl" not in code and ".run(" in code and not promoted
    assert len(autotuner.LAUNCHES) == 2


def test_dynamic_shapes_keep_run(state):
    autotuner, promoted = state
    fn = lambda a: a.cos() * 3  # noqa: E731
    compiled = torch.compile(fn, dynamic=True)
    for n in (40, 72, 40):
        x = torch.randn(n, device="npu")
        _check(compiled(x), fn, x)
    assert (
        not promoted and len(autotuner.LAUNCHES) == 3
    )  # symbolic numels: the grid varies per call


def test_fallback_and_strict_when_a_kernel_cannot_launch_statically(state, monkeypatch):
    autotuner, promoted = state

    def refuse(fn, *args, **kwargs):
        raise NotImplementedError("cannot launch this kernel statically")

    monkeypatch.setattr(autotuner, "static_binder", lambda: refuse)
    x = torch.randn(16, 48, device="npu")
    with torch._inductor.config.patch(strict_static_triton_launcher=False):
        compiled, out, code = _compile(_fn, x)
        y = torch.randn(16, 48, device="npu")
        _check(compiled(y), _fn, y)
    _check(out, _fn, x)
    assert "_npu_dl[0](" in code and not promoted  # the slot fell back to run for good
    assert [launch[-1] for launch in autotuner.LAUNCHES] == [False, False]  # npu-sim's entry point
    torch._dynamo.reset()
    autotuner._static_launches.clear()
    with torch._inductor.config.patch(strict_static_triton_launcher=True):
        with pytest.raises(Exception, match="cannot be launched statically"):
            torch.compile(lambda a: a.tanh() * 5)(x)


def test_profiler_sees_kernels_through_run(state):
    autotuner, promoted = state
    x = torch.randn(16, 48, device="npu")
    compiled, _, _ = _compile(_fn, x)
    assert promoted
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        compiled(x)
    assert len(autotuner.LAUNCHES) == 2  # while profiling, run() records the kernel as upstream
    compiled(x)
    assert len(autotuner.LAUNCHES) == 2


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "incremental_autotune"),
    reason=f"torch {torch.__version__} has no Inductor flag incremental_autotune",
)
def test_incrementally_tuned_kernel_is_tuned_then_launched_directly(state):
    """A kernel still trying configs (A29: one candidate per real call) goes through run on
    every call; once it settles, its slot becomes the winner's launch object."""
    from torch._dynamo.utils import counters

    autotuner, promoted = state
    counters.clear()
    fn = lambda a: torch.tanh(a) * 3  # noqa: E731
    x = torch.randn(1024, device="npu")
    with torch._inductor.config.patch(
        incremental_autotune=True,
        max_autotune_pointwise=True,
        inductor_default_autotune_warmup=0,
        inductor_default_autotune_rep=1,
    ):
        compiled = torch.compile(fn)
        _check(compiled(x), fn, x)
        for _ in range(32):
            if promoted:
                break
            _check(compiled(x), fn, x)
    runs = counters["npu_autotune"]["incremental_runs"]
    assert runs >= 2 and promoted  # every candidate ran for real, then the slot was promoted
    (kernel,) = [
        k for k in autotuner._static_launches if autotuner._static_launches[k] is promoted[0][2]
    ]
    assert len(kernel.configs) == 1 and kernel._npu_incremental is None
    assert (
        kernel.compile_results[0].config.kwargs == kernel.configs[0].kwargs
    )  # the winner is bound
    y = torch.randn(1024, device="npu")
    _check(compiled(y), fn, y)
