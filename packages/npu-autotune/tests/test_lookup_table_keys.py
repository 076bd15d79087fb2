"""lookup_table.table (U04) and lookup_table.check_src_hash (U03) for npu kernels: entries keyed
"<device>+<shape>+<kernel>" (or "<shape>+<kernel>") override a kernel's configs; a stale
source hash is ignored with the check on and used with it off; another device's entry is
never used (see npu_autotune/lookup_table.py for the format)."""

import pytest
import torch
from torch._dynamo.utils import counters
from torch._inductor import config
from triton import Config

from npu_autotune import lookup_table

PRESET = Config({"XBLOCK": 16}, num_warps=1, num_stages=1)


def _fn(a):
    return torch.cos(a) * 3


@pytest.fixture
def tuned(fresh, kernels):
    """(kernel object, input) after a first compile of _fn: what a table entry is made from."""
    x = torch.randn(2048, device="npu")
    torch.compile(_fn)(x)
    (k,) = kernels()
    torch._dynamo.reset()
    counters.clear()
    return k, x


def _compile_with(table, x, **flags):
    from npu_lowering.runtime.autotuner import LAUNCHES

    LAUNCHES.clear()
    with config.patch(
        {
            "lookup_table.table": table,
            "max_autotune_pointwise": True,
            "force_disable_caches": True,
            **flags,
        }
    ):
        out = torch.compile(_fn)(x)
    torch.testing.assert_close(out.cpu(), _fn(x.cpu()))
    return LAUNCHES[-1][2], counters["npu_autotune"]["bench.calls"]


def test_key_format(tuned):
    k, _ = tuned
    key, value = lookup_table.entry(k, PRESET)
    assert key == f"{torch.npu.get_device_properties(0).name}+x=2048+triton_poi_fused_cos_mul"
    assert value == {
        "XBLOCK": 16,
        "num_warps": 1,
        "num_stages": 1,
        "src_hash": lookup_table.src_hash(k),
    }
    assert lookup_table.keys(k) == [key, "x=2048+triton_poi_fused_cos_mul"]


@pytest.mark.feature("U04")
def test_device_specific_entry_overrides_the_configs(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    launched, benched = _compile_with({key: [value]}, x)
    assert launched == {"XBLOCK": 16} and benched == 0  # used as is, no benchmarking


@pytest.mark.feature("U04")
def test_device_agnostic_entry_overrides_the_configs(tuned):
    k, x = tuned
    _, value = lookup_table.entry(k, PRESET)
    launched, benched = _compile_with({lookup_table.keys(k)[1]: [value]}, x)
    assert launched == {"XBLOCK": 16} and benched == 0


@pytest.mark.feature("U04")
def test_several_entries_are_the_only_candidates(tuned):
    k, x = tuned
    key, a = lookup_table.entry(k, PRESET)
    _, b = lookup_table.entry(k, Config({"XBLOCK": 32}, num_warps=1, num_stages=1))
    launched, benched = _compile_with({key: [a, b]}, x)
    assert benched == 2 and launched["XBLOCK"] in (16, 32)


@pytest.mark.feature("U04")
def test_an_entry_for_another_device_is_not_used(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    other = "Ascend950" if not key.startswith("Ascend950+") else "Ascend910B2"
    launched, benched = _compile_with({f"{other}+{lookup_table.keys(k)[1]}": [value]}, x)
    assert benched >= 2  # tuned over its own candidates: the entry is another SoC's


@pytest.mark.feature("U04")
def test_without_an_entry_the_kernel_is_tuned(tuned):
    k, x = tuned
    _, benched = _compile_with(None, x)
    assert benched >= 2


@pytest.mark.feature("U03")
def test_a_stale_entry_is_ignored_when_the_source_hash_is_checked(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    stale = {**value, "src_hash": "0" * 64}  # written for an older version of the kernel's source
    launched, benched = _compile_with({key: [stale]}, x)
    assert benched >= 2  # tuned over its own candidates: the stale entry is not used


@pytest.mark.feature("U03")
def test_a_stale_entry_is_used_without_the_check(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    stale = {**value, "src_hash": "0" * 64}
    launched, benched = _compile_with({key: [stale]}, x, **{"lookup_table.check_src_hash": False})
    assert launched == {"XBLOCK": 16} and benched == 0


@pytest.mark.feature("U03")
def test_a_fresh_entry_is_used_with_the_check(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    launched, benched = _compile_with({key: [value]}, x, **{"lookup_table.check_src_hash": True})
    assert launched == {"XBLOCK": 16} and benched == 0


def test_bad_entries_are_rejected_naming_what_is_allowed(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    with pytest.raises(
        Exception, match=r"not arguments of triton_poi_fused_cos_mul; allowed: \['XBLOCK'\]"
    ):
        _compile_with({key: [{**value, "YBLOCK": 4}]}, x)
    torch._dynamo.reset()
    with pytest.raises(Exception, match="must be a list of config dicts"):
        _compile_with({key: value}, x)


def test_an_entry_over_the_unified_buffer_is_refused(tuned):
    k, x = tuned
    key, value = lookup_table.entry(k, PRESET)
    with pytest.raises(Exception, match="no config fits the unified buffer"):
        _compile_with({key: [{**value, "XBLOCK": 1 << 20}]}, x)
