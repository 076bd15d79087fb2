"""User @triton.autotune kernels in npu graphs: tuned at compile time on the graph's real
inputs (A54, triton.autotune_with_sample_inputs) and upstream's unsupported autotune
arguments (A56, unsafe_ignore_unsupported_triton_autotune_args)."""

import pytest
import torch
import triton
import triton.language as tl
from torch._inductor import config

from npu_lowering import _compat as lowering_compat


@pytest.fixture(scope="module", autouse=True)
def components():
    # Dynamo puts user kernels on npu tensors into the graph once every component is up
    import npu_inductor

    npu_inductor.enable()


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})], key=["n"])
@triton.jit
def add_one(x, hint, out, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out + offs, tl.load(x + offs, mask=m) + 1, mask=m)


def add_one_model(x, hint):
    out = torch.empty_like(x)
    n = x.numel()
    add_one[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, hint, out, n)
    return out * 2


@pytest.fixture
def seen(monkeypatch):
    """(config kwargs, tensor arguments on the host) of every config npu-autotune launched."""
    import npu_autotune.autotuner as at

    calls = []
    call = at.SimLauncher.__call__

    def spy(self, *args, **kwargs):
        calls.append(
            (
                dict(self.config.kwargs),
                [a.cpu().clone() for a in args if isinstance(a, torch.Tensor)],
            )
        )
        return call(self, *args, **kwargs)

    monkeypatch.setattr(at.SimLauncher, "__call__", spy)
    return calls


def _sample_input_flags(on: bool) -> dict:
    return {
        "triton.autotune_at_compile_time": True,
        "triton.autotune_with_sample_inputs": on,
        "max_autotune": True,
        "force_disable_caches": True,
    }


@pytest.mark.feature("A54")
@pytest.mark.parametrize("with_sample_inputs", [True, False])
def test_user_kernel_tuned_at_compile_time_on_the_real_inputs(fresh, seen, with_sample_inputs):
    x = torch.arange(100, dtype=torch.float32, device="npu")
    hint = torch.full((1,), 64.0, device="npu")
    with config.patch(_sample_input_flags(with_sample_inputs)):
        out = torch.compile(add_one_model)(x, hint)
    torch.testing.assert_close(out.cpu(), (torch.arange(100.0) + 1) * 2)
    tuned = [args for cfg, args in seen if "BLOCK" in cfg]
    assert len(tuned) >= 2  # both configs benchmarked
    users = [torch.equal(args[0], x.cpu()) and torch.equal(args[1], hint.cpu()) for args in tuned]
    assert all(users) if with_sample_inputs else not any(users)


@pytest.mark.feature("A54")
@pytest.mark.parametrize("with_sample_inputs", [True, False])
def test_the_chosen_config_follows_the_real_inputs(fresh, seen, with_sample_inputs):
    # a stand-in benchmarker whose timing depends on the data the kernel ran on: the config
    # whose BLOCK is closest to hint[0] is fastest. The user's hint says 64; random example
    # inputs (upstream's default) say something near 0, i.e. BLOCK 16
    from npu_lowering.runtime.autotuner import LAUNCHES

    from npu_autotune import _compat, benchmarker

    def fake(self, fn, *, warmup, rep, **kwargs):
        fn()
        cfg, args = seen[-1]
        return (
            abs(cfg["BLOCK"] - float(args[1][0])) if "BLOCK" in cfg else 1.0
        )  # 1.0: the generated kernel

    _compat.register_npu_benchmarker("npu", fake)
    try:
        x = torch.randn(100, device="npu")
        with config.patch(_sample_input_flags(with_sample_inputs)):
            out = torch.compile(add_one_model)(x, torch.full((1,), 64.0, device="npu"))
    finally:
        _compat.register_npu_benchmarker("npu", benchmarker.benchmark_npu)
    torch.testing.assert_close(out.cpu(), (x.cpu() + 1) * 2)
    (name,) = {e[0] for e in LAUNCHES if e[0].startswith("add_one")}
    assert [e for e in LAUNCHES if e[0] == name][-1][2]["BLOCK"] == (
        64 if with_sample_inputs else 16
    )


@triton.autotune(
    configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})],
    key=["n"],
    restore_value=["x"],
)
@triton.jit
def increment(x, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x + offs, tl.load(x + offs, mask=m) + 1, mask=m)


def increment_model(x):
    n = x.numel()
    increment[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, n)
    return x.sin()


@pytest.mark.feature("A54")
def test_tuning_on_a_mutated_sample_input_leaves_the_users_tensor_alone(fresh, seen):
    # the kernel mutates the graph input in place (restore_value, as Triton asks): tuning runs
    # it many times, on a copy of the user's tensor, each config from the user's values
    x = torch.arange(64, dtype=torch.float32, device="npu")
    with config.patch(_sample_input_flags(True)):
        out = torch.compile(increment_model)(x)
    torch.testing.assert_close(x.cpu(), torch.arange(64.0) + 1)  # incremented exactly once
    torch.testing.assert_close(out.cpu(), (torch.arange(64.0) + 1).sin())
    first = {}  # the first launch of each config: the sample input as the user passed it
    for cfg, args in seen:
        first.setdefault(cfg.get("BLOCK"), args[0])
    assert set(first) >= {16, 32} and all(
        torch.equal(first[b], torch.arange(64.0)) for b in (16, 32)
    )


# ---- A56: triton.autotune arguments Inductor does not support ---------------------------
# Upstream (Dynamo's TritonHOPifier, every device) refuses use_cuda_graph, pre_hook/post_hook
# and a Config's pre_hook unless unsafe_ignore_unsupported_triton_autotune_args; warmup/rep
# are refused on npu by npu-autotune (upstream's check of them is inert with Triton 3.x).
HOOK_CALLS = []


def _hook(*args, **kwargs):
    HOOK_CALLS.append(args)


def _scale_kernel(**autotune_args):
    configs = autotune_args.pop(
        "configs", [triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 64})]
    )

    @triton.autotune(configs=configs, key=["n"], **autotune_args)
    @triton.jit
    def scale(x, out, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = offs < n
        tl.store(out + offs, tl.load(x + offs, mask=m) * 3, mask=m)

    def model(x):
        out = torch.empty_like(x)
        n = x.numel()
        scale[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out + 1

    return model


UNSUPPORTED = {
    "use_cuda_graph": dict(use_cuda_graph=True),
    "pre_hook": dict(pre_hook=_hook),
    "post_hook": dict(post_hook=_hook),
    "config_pre_hook": dict(
        configs=[triton.Config({"BLOCK": 16}, pre_hook=_hook), triton.Config({"BLOCK": 64})]
    ),
    "warmup_rep": dict(warmup=3, rep=7),
}


@pytest.mark.feature("A56")
@pytest.mark.parametrize("arg", list(UNSUPPORTED))
def test_unsupported_autotune_args_are_refused_by_default(fresh, arg):
    import warnings

    model = _scale_kernel(**UNSUPPORTED[arg])
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DeprecationWarning
        )  # Triton's, for warmup/rep/use_cuda_graph
        with config.patch(force_disable_caches=True), pytest.raises(Exception, match="supported"):
            torch.compile(model, fullgraph=True)(torch.randn(100, device="npu"))


@pytest.mark.feature("A56")
@pytest.mark.skipif(
    not lowering_compat.lazy_triton_compile_available(),
    reason="this torch (2.11) has no torch._inductor.runtime.triton_lazy_compile: npu's cpp_wrapper "
    "is refused before codegen (npu-lowering's test_cpp_wrapper_without_lazy_compile_is_a_clear_error)",
)
def test_refused_under_the_cpp_wrapper_too(fresh):
    # npu-autotune's own refusal (warmup/rep) runs from the npu wrapper codegen's
    # before_wrapper_codegen hook, which the C++ wrapper (JIT and AOTInductor) runs as the
    # Python wrapper does: refused before any C++ is generated or built
    import warnings

    model = _scale_kernel(**UNSUPPORTED["warmup_rep"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        with (
            config.patch(force_disable_caches=True, cpp_wrapper=True),
            pytest.raises(Exception, match="supported"),
        ):
            torch.compile(model, fullgraph=True)(torch.randn(100, device="npu"))


@pytest.mark.feature("A56")
@pytest.mark.parametrize("arg", list(UNSUPPORTED))
def test_with_the_flag_unsupported_args_are_ignored(fresh, arg):
    import npu_autotune.autotuner as at
    from npu_lowering.runtime.autotuner import LAUNCHES

    from npu_autotune import _compat, benchmarker

    budgets = []

    def fake(self, fn, *, warmup, rep, **kwargs):  # the smaller BLOCK is "faster"
        fn()
        budgets.append(benchmarker._flag_reps.get())  # True: Inductor's warmup/rep flags apply
        return float(at.LAUNCHED[-1][1].get("BLOCK", 1))

    HOOK_CALLS.clear()
    LAUNCHES.clear()
    model = _scale_kernel(**UNSUPPORTED[arg])
    x = torch.randn(100, device="npu")
    _compat.register_npu_benchmarker("npu", fake)
    try:
        with config.patch(
            unsafe_ignore_unsupported_triton_autotune_args=True,
            max_autotune=True,
            force_disable_caches=True,
        ):
            out = torch.compile(model, fullgraph=True)(x)
    finally:
        _compat.register_npu_benchmarker("npu", benchmarker.benchmark_npu)
    torch.testing.assert_close(out.cpu(), x.cpu() * 3 + 1)
    assert not HOOK_CALLS  # the hooks are ignored, never run
    user = [e for e in LAUNCHES if e[0].startswith("scale")]
    assert user and user[-1][2] == {"BLOCK": 16}  # tuned by Inductor's autotuner
    assert budgets and all(
        budgets
    )  # benchmarked on Inductor's budgets, never with the user's warmup/rep
