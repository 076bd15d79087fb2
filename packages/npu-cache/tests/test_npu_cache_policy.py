"""Upstream's cache-policy flags on npu compiles (npu-sim), each case in one fresh process."""

import pytest


@pytest.mark.feature("K02")
def test_marked_cacheable_function_version_enters_the_key(npu_job):
    out = npu_job({"case": "k02"}, script="cache_policy.py")
    assert all(step["ok"] for step in out.values())
    # a user function in the graph: not cacheable unless marked
    assert out["unmarked"]["aot"].get("autograd_cache_bypass") == 1
    # marked "v1": saved, then served from the cache
    assert out["v1_first"]["aot"].get("autograd_cache_saved") == 1
    assert out["v1_again"]["aot"].get("autograd_cache_hit") == 1
    # its self-reported version is part of the key: "v2" misses
    assert (
        out["v2"]["aot"].get("autograd_cache_miss") == 1
        and "autograd_cache_hit" not in out["v2"]["aot"]
    )


@pytest.mark.feature("K03")
def test_skip_dynamic_shape_guards_on_lookup(npu_job):
    out = npu_job({"case": "k03"}, script="cache_policy.py")
    checked, skipped = out["skip=False"], out["skip=True"]
    for case in (checked, skipped):
        assert case["large"]["ok"] and case["small"]["ok"]
        assert case["large"]["inductor"].get("fxgraph_cache_miss") == 1
    # the same FX graph for a size the entry's guards (s0 > 4) reject: a miss when checked...
    assert checked["small"]["inductor"].get("fxgraph_cache_miss") == 1
    assert "fxgraph_cache_hit" not in checked["small"]["inductor"]
    # ...a hit when the flag skips them (and still correct: both branches compute the same)
    assert skipped["small"]["inductor"].get("fxgraph_cache_hit") == 1
