"""Dynamo and AOT features on the npu path: the fake tensor cache (G01) and regional
compile of nested_compile_region subgraphs (G08)."""

import pytest
import torch

from npu_lowering.runtime.autotuner import LAUNCHES


@pytest.mark.feature("G01")
def test_fake_tensor_cache_stays_on_and_crosschecks_clean_on_npu():
    from torch._subclasses.fake_tensor import FakeTensorMode

    def fn(a, b):
        h = torch.relu(a @ b)
        return (h * h).softmax(-1) + h.mean(0)

    # two frames Dynamo traces separately, the same npu ops in each; no torch._dynamo.reset()
    # between them: from torch 2.15 on it also empties the (process-wide) fake tensor cache
    def first_frame(a, b):
        return fn(a, b)

    def second_frame(a, b):
        return fn(a, b)

    a, b = torch.randn(8, 8, device="npu"), torch.randn(8, 8, device="npu")
    with torch._dynamo.config.patch(
        fake_tensor_cache_enabled=True, fake_tensor_cache_crosscheck_enabled=True
    ):
        torch._dynamo.reset()
        start = FakeTensorMode.cache_info()
        torch.compile(first_frame)(a, b)
        first = FakeTensorMode.cache_info()
        assert (
            first.size > start.size or first.hits > start.hits
        )  # npu fake ops went into the cache
        out = torch.compile(second_frame)(a, b)  # the same npu ops again: served from the cache
        assert FakeTensorMode.cache_info().hits > first.hits
    torch.testing.assert_close(out.cpu(), fn(a.cpu(), b.cpu()), atol=1e-5, rtol=1e-5)


@pytest.mark.feature("G08")
def test_nested_compile_region_is_compiled_once_and_reused():
    from torch._higher_order_ops.invoke_subgraph import get_invoke_subgraph_compile_options

    with torch._dynamo.config.patch(enable_invoke_subgraph_regional_compile=True):

        @torch.compiler.nested_compile_region(options=get_invoke_subgraph_compile_options())
        def region(x, w):
            return torch.relu(x * w).sin() + 1

        def fn(x, w):
            return region(region(x, w) * 2, w).sum()

        x, w = torch.randn(8, 8, device="npu"), torch.randn(8, device="npu")
        torch._dynamo.reset()
        LAUNCHES.clear()
        out = torch.compile(fn, fullgraph=True)(x, w)
    torch.testing.assert_close(out.cpu(), fn(x.cpu(), w.cpu()), atol=1e-4, rtol=1e-5)
    names = [launch[0] for launch in LAUNCHES]
    region_kernels = [n for n in set(names) if "relu_sin" in n]
    assert len(region_kernels) == 1, names  # one kernel for the region...
    assert names.count(region_kernels[0]) == 2  # ...launched for both calls


def test_regional_options_need_the_config_flag():
    from torch._higher_order_ops.invoke_subgraph import get_invoke_subgraph_compile_options

    with torch._dynamo.config.patch(enable_invoke_subgraph_regional_compile=False):
        with pytest.raises(RuntimeError, match="experimental"):
            torch.compiler.nested_compile_region(
                lambda x: x, options=get_invoke_subgraph_compile_options()
            )
