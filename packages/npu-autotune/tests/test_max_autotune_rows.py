"""Max-autotune flags on npu (issue 21): each test compiles a tiny GEMM on npu-sim with
upstream's Triton GEMM templates over npu's tiles (gemm_templates.py) and shows that the flag
changes what is generated or benchmarked. Fusion decided by rule (benchmark_epilogue_fusion
off) unless the row is about benchmarking: timing interpreted kernels on a busy machine flips."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

TEMPLATES = dict(max_autotune_gemm=True, max_autotune_gemm_backends="TRITON",
                 benchmark_epilogue_fusion=False, **{"test_configs.max_mm_configs": 2})


def compiled(fn, *args, **flags):
    """(out, generated code) of fn compiled with GEMM templates and the flags; checked vs eager."""
    torch._dynamo.reset()
    with config.patch({**TEMPLATES, **flags}):
        out, code = run_and_get_code(torch.compile(fn), *args)
    want = fn(*(a.cpu() for a in args))
    torch.testing.assert_close([o.cpu() for o in out] if isinstance(out, (tuple, list)) else out.cpu(),
                               list(want) if isinstance(want, tuple) else want, rtol=1e-4, atol=1e-4)
    return out, "\n".join(code)


def rand(*shapes):
    torch.manual_seed(0)
    return [torch.randn(*s, device="npu") for s in shapes]


def n_kernels(code: str) -> int:
    return code.count("@triton.jit")


@pytest.mark.feature("T01")
def test_epilogue_fusion_puts_the_pointwise_consumer_into_the_gemm(fresh):
    a, b = rand((32, 32), (32, 32))
    fn = lambda x, y: torch.relu(x @ y) * 2
    _, fused = compiled(fn, a, b, epilogue_fusion=True)
    _, apart = compiled(fn, a, b, epilogue_fusion=False)
    assert "tl.dot(" in fused and "tl.dot(" in apart
    assert n_kernels(fused) == 1 and n_kernels(apart) == 2


@pytest.mark.feature("T01")
def test_prologue_fusion_puts_the_pointwise_producer_into_the_gemm(fresh):
    a, b = rand((32, 32), (32, 32))
    fn = lambda x, y: (x * 3) @ y
    _, fused = compiled(fn, a, b, prologue_fusion=True)
    _, apart = compiled(fn, a, b, prologue_fusion=False)
    assert n_kernels(fused) == 1 and n_kernels(apart) == 2


@pytest.mark.feature("T02")
def test_epilogue_fusion_first_gives_the_epilogue_to_the_template(fresh):
    # p = 2 * (x @ y) can fuse into the GEMM (epilogue) or into the row sum that reads it;
    # whichever is scored first wins (the wrapper names each kernel's source ops)
    a, b = rand((32, 32), (32, 32))

    def fn(x, y):
        p = (x @ y) * 2
        return p, p.sum(1)

    _, first = compiled(fn, a, b, epilogue_fusion_first=True)
    _, last = compiled(fn, a, b, epilogue_fusion_first=False)
    assert n_kernels(first) == 2 and n_kernels(last) == 2
    assert "Original ATen: [aten.mm, aten.mul]" in first and "Original ATen: [aten.sum]" in first
    assert "Original ATen: [aten.mm]" in last and "Original ATen: [aten.mul, aten.sum]" in last
