"""A GEMM template's epilogue and the next GEMM's prologue wanting the same node.

Linear -> GELU -> Linear on npu: the first GEMM (M * 8 <= N) is offered two Triton choices
under max-autotune (upstream's template and npu-autotune's swap-A/B), so it becomes a
MultiTemplateBuffer whose GELU epilogue is benchmarked at the end of the fusion round; the
second GEMM has one choice, a plain template that takes the GELU as its prologue at once.
Upstream's synchronous evaluation then fuses the saved (GEMM, GELU) pair with a GELU that is
gone (KeyError in fuse_two_nodes) when the benchmark says the fused kernel wins. npu's
scheduling refuses the stale pair; default mode offers one choice, so nothing is timed.

The benchmark's answer is pinned (forced to win, forced to lose): the outcome may not depend
on how fast this machine runs Triton's interpreter.
"""

import pytest
import torch
from torch._inductor import config, ir
from torch._inductor.scheduler import Scheduler
from torch._inductor.utils import fresh_cache, run_and_get_code


def assert_matches(out, ref):
    torch.testing.assert_close(out.detach().cpu(), ref, atol=1e-4, rtol=1e-4)


@pytest.fixture(autouse=True)
def gemm_templates():
    pytest.importorskip("npu_autotune.gemm_swap_ab")  # the second choice (swap-A/B)
    with fresh_cache():
        yield
    torch._dynamo.reset()


@pytest.fixture
def fused_wins(monkeypatch, request):
    """Pin what benchmarking a fused template kernel says, and count what was timed."""
    timed = {"fused": 0, "multi_templates": 0}
    ms = 0.0 if request.param else 1e9

    def benchmark_codegened_module(self, module, device):
        timed["fused"] += 1
        return ms, getattr(module, "__file__", "")

    real_init = ir.MultiTemplateBuffer.__init__

    def counting_init(self, *args, **kwargs):
        timed["multi_templates"] += 1
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(Scheduler, "benchmark_codegened_module", benchmark_codegened_module)
    monkeypatch.setattr(ir.MultiTemplateBuffer, "__init__", counting_init)
    return timed


def mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.GELU(), torch.nn.Linear(256, 64))


def run(model, x, train):
    """One compiled call (and a backward when training), against eager on the CPU."""
    eager = mlp()
    compiled = torch.compile(model)
    if train:
        xr = x.cpu().requires_grad_()
        ref = eager(xr)
        ref.sum().backward()
        xn = x.detach().clone().requires_grad_()
        out, code = run_and_get_code(lambda: compiled(xn))
        out.sum().backward()
        assert_matches(xn.grad, xr.grad)
        assert_matches(model[0].weight.grad, eager[0].weight.grad)
    else:
        with torch.no_grad():
            ref = eager(x.cpu())
            out, code = run_and_get_code(compiled, x)
    assert_matches(out, ref)
    return code


CASES = [
    pytest.param(train, threads, id=f"{'train' if train else 'no_grad'}-threads{threads}")
    for train in (False, True)
    for threads in (1, 2)
]


@pytest.mark.parametrize(
    "fused_wins", [True, False], ids=["fused-wins", "fused-loses"], indirect=True
)
@pytest.mark.parametrize("train,threads", CASES)
def test_max_autotune_never_fuses_a_stale_pair(fused_wins, train, threads):
    # TRITON only and one config per template: exactly the crash's shape (the first GEMM two
    # choices, the second one); with ATen or more configs both GEMMs are multi-templates
    flags = {
        "max_autotune": True,
        "max_autotune_gemm_backends": "TRITON",
        "compile_threads": threads,
        "test_configs.max_mm_configs": 1,
    }
    torch._dynamo.reset()
    with config.patch(flags):
        run(mlp().to("npu"), torch.randn(32, 64, device="npu"), train)
    assert fused_wins["multi_templates"] >= 1  # the benchmarked path was taken


@pytest.mark.parametrize(
    "fused_wins", [True, False], ids=["fused-wins", "fused-loses"], indirect=True
)
@pytest.mark.parametrize("train,threads", CASES)
def test_default_mode_times_nothing(fused_wins, train, threads):
    # upstream's defaults as shipped (benchmark_epilogue_fusion on), but compile_threads
    torch._dynamo.reset()
    with config.patch(compile_threads=threads):
        code = run(mlp().to("npu"), torch.randn(32, 64, device="npu"), train)
    assert "tl.dot(" in "\n".join(code)  # the small-GEMM templates are in use
    assert fused_wins == {"fused": 0, "multi_templates": 0}
