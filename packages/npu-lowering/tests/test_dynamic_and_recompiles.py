"""Dynamic shapes (B02) and Dynamo's recompile controls on npu (G03-G06)."""

import pytest
import torch
from torch._dynamo.utils import counters


def _frames():
    return counters["stats"]["unique_graphs"]


@pytest.mark.feature("B02")
def test_dynamic_shapes_reach_kernels_without_recompiles():
    from torch._inductor.utils import run_and_get_code

    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(lambda a: (a * 2).softmax(-1).sum(0), dynamic=True)
    out, (code,) = run_and_get_code(fn, torch.randn(5, 7, device="npu"))
    assert "ks0" in code or "s0" in code  # symbolic sizes reach the wrapper and kernels
    graphs = _frames()
    for rows, cols in [(3, 9), (11, 4), (6, 13)]:
        x = torch.randn(rows, cols, device="npu")
        torch.testing.assert_close(
            fn(x).cpu(), (x.cpu() * 2).softmax(-1).sum(0), atol=1e-5, rtol=1e-5
        )
    assert _frames() == graphs  # no recompile per size


@pytest.mark.feature("B02")
def test_mark_dynamic_on_npu():
    torch._dynamo.reset()
    counters.clear()
    fn = torch.compile(lambda a: a.relu() + 1)
    for n in (8, 16, 24):
        x = torch.randn(n, device="npu")
        torch._dynamo.mark_dynamic(x, 0)
        torch.testing.assert_close(fn(x).cpu(), x.cpu().relu() + 1)
    assert _frames() == 1


def _recompiling_fn():
    def f(x, k):
        return x * k  # a new constant k specializes: one graph per value

    return torch.compile(f)


@pytest.mark.feature("G04")
def test_recompile_limit_falls_back_to_eager_on_npu():
    torch._dynamo.reset()
    counters.clear()
    x = torch.ones(4, device="npu")
    with torch._dynamo.config.patch(recompile_limit=2, automatic_dynamic_shapes=False):
        fn = _recompiling_fn()
        for k in range(5):
            assert fn(x, k).cpu().tolist() == [float(k)] * 4  # still correct through eager
    assert _frames() == 2


@pytest.mark.feature("G03")
def test_accumulated_recompile_limit_falls_back_to_eager_on_npu():
    torch._dynamo.reset()
    counters.clear()
    x = torch.ones(4, device="npu")
    with torch._dynamo.config.patch(
        accumulated_recompile_limit=3, recompile_limit=100, automatic_dynamic_shapes=False
    ):
        fns = [_recompiling_fn() for _ in range(2)]
        for k in range(3):
            for fn in fns:
                assert fn(x, k).cpu().tolist() == [float(k)] * 4
    assert _frames() == 3


@pytest.mark.feature("G05")
def test_error_on_recompile_raises_on_npu():
    torch._dynamo.reset()
    x = torch.ones(4, device="npu")
    fn = _recompiling_fn()
    fn(x, 1)
    with torch._dynamo.config.patch(error_on_recompile=True, automatic_dynamic_shapes=False):
        with pytest.raises(torch._dynamo.exc.RecompileError):
            fn(x, 2)


@pytest.mark.feature("G06")
def test_fail_on_recompile_limit_hit_raises_on_npu():
    torch._dynamo.reset()
    x = torch.ones(4, device="npu")
    with torch._dynamo.config.patch(
        recompile_limit=1, fail_on_recompile_limit_hit=True, automatic_dynamic_shapes=False
    ):
        fn = _recompiling_fn()
        fn(x, 1)
        with pytest.raises(torch._dynamo.exc.FailOnRecompileLimitHit):
            fn(x, 2)


def test_int64_indexing_over_symbolic_sizes_passes_plain_size_arguments():
    # With dynamic sizes an index may pass int32, so npu kernels compute it in int64 over
    # widened symbols; a widened size symbol was taken for a new size argument and the wrapper
    # passed "s53.to(tl.int64)" ("'int' object has no attribute 'to'")
    import torch.nn.functional as F
    from torch._inductor.utils import run_and_get_code

    def f(x):
        return F.interpolate(x, scale_factor=2, mode="nearest") + 1

    torch._dynamo.reset()
    compiled = torch.compile(f, dynamic=True)
    for shape in ((1, 2, 3, 4), (2, 3, 5, 6)):
        x = torch.randn(shape)
        out, codes = run_and_get_code(compiled, x.to("npu"))
        torch.testing.assert_close(out.cpu(), f(x))
    assert "tl.int64" in codes[0]
