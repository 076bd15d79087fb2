"""User @triton.autotune kernels in npu graphs: tuned at compile time on the graph's real
inputs (A54, triton.autotune_with_sample_inputs) and upstream's unsupported autotune
arguments (A56, unsafe_ignore_unsupported_triton_autotune_args)."""

import pytest
import torch
import triton
import triton.language as tl
from torch._inductor import config


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
        calls.append((dict(self.config.kwargs), [a.cpu().clone() for a in args if isinstance(a, torch.Tensor)]))
        return call(self, *args, **kwargs)

    monkeypatch.setattr(at.SimLauncher, "__call__", spy)
    return calls


def _sample_input_flags(on: bool) -> dict:
    return {"triton.autotune_at_compile_time": True, "triton.autotune_with_sample_inputs": on,
            "max_autotune": True, "force_disable_caches": True}


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
    from torch._inductor.runtime import benchmarking

    from npu_autotune import benchmarker

    def fake(self, fn, *, warmup, rep, **kwargs):
        fn()
        cfg, args = seen[-1]
        return abs(cfg["BLOCK"] - float(args[1][0])) if "BLOCK" in cfg else 1.0  # 1.0: the generated kernel

    benchmarking.register_benchmarker("npu", fake, override=True)
    try:
        x = torch.randn(100, device="npu")
        with config.patch(_sample_input_flags(with_sample_inputs)):
            out = torch.compile(add_one_model)(x, torch.full((1,), 64.0, device="npu"))
    finally:
        benchmarking.register_benchmarker("npu", benchmarker.benchmark_npu, override=True)
    torch.testing.assert_close(out.cpu(), (x.cpu() + 1) * 2)
    (name,) = {e[0] for e in LAUNCHES if e[0].startswith("add_one")}
    assert [e for e in LAUNCHES if e[0] == name][-1][2]["BLOCK"] == (64 if with_sample_inputs else 16)


@triton.autotune(configs=[triton.Config({"BLOCK": 16}), triton.Config({"BLOCK": 32})], key=["n"],
                 restore_value=["x"])
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
    assert set(first) >= {16, 32} and all(torch.equal(first[b], torch.arange(64.0)) for b in (16, 32))
