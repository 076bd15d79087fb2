"""autotune_lookup_table (U02): a preset config, keyed by the name-stripped kernel source and
size hints, is used on npu without benchmarking; one over the UB is refused."""

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from torch._inductor.runtime.triton_heuristics import generate_lookup_hash_from_source_code


def _fn(a):
    return torch.cos(a) + 2


def _key(kernels):
    x = torch.randn(2048, device="npu")
    torch.compile(_fn)(x)
    (k,) = kernels()
    return generate_lookup_hash_from_source_code(str(k.size_hints), k.fn.src), x


@pytest.mark.feature("U02")
def test_lookup_table_presets_the_config(fresh, kernels):
    from npu_lowering.runtime.autotuner import LAUNCHES

    key, x = _key(kernels)
    torch._dynamo.reset()
    table = {key: {"XBLOCK": 16, "num_warps": 1, "num_stages": 1}}
    with config.patch(
        autotune_lookup_table=table, max_autotune_pointwise=True, force_disable_caches=True
    ):
        out = torch.compile(_fn)(x)
    torch.testing.assert_close(out.cpu(), _fn(x.cpu()))
    assert not fresh and counters["npu_autotune"]["bench.calls"] == 0  # no benchmarking
    assert LAUNCHES[-1][2] == {"XBLOCK": 16}


@pytest.mark.feature("U02")
def test_without_a_table_entry_the_kernel_is_tuned(fresh, kernels):
    key, x = _key(kernels)
    torch._dynamo.reset()
    with config.patch(
        autotune_lookup_table={"0" * 64: {"XBLOCK": 16, "num_warps": 1, "num_stages": 1}},
        max_autotune_pointwise=True,
        force_disable_caches=True,
    ):
        torch.compile(_fn)(x)
    assert counters["npu_autotune"]["bench.calls"] >= 2


def test_a_preset_over_the_unified_buffer_is_refused(fresh, kernels):
    key, x = _key(kernels)
    torch._dynamo.reset()
    with config.patch(
        autotune_lookup_table={key: {"XBLOCK": 1 << 20, "num_warps": 1, "num_stages": 1}},
        force_disable_caches=True,
    ):
        with pytest.raises(Exception, match="no config fits the unified buffer"):
            torch.compile(_fn)(x)
