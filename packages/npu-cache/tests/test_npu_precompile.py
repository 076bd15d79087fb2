"""Dynamo precompile on npu (npu-sim): caching_precompile (P01) and strict_precompile (P02)."""

import pytest

PRECOMPILE = {"caching_precompile": True}


@pytest.mark.feature("P01")
def test_new_process_serves_compiled_function_without_compile_fx(npu_job):
    spec = {"fn": "two_kernels", "train": True, "dynamo": PRECOMPILE, "save_artifacts": True}
    first = npu_job(spec, local="a")
    assert first["ok"] == [True] and first["saved"]
    assert first["inner_calls"] == 2  # forward and backward compiled
    second = npu_job({**spec, "save_artifacts": False}, local="a")
    assert second["ok"] == [True]  # forward and gradients match eager
    assert second["dynamo"]["dynamo_cache"] == {"dynamo_cache_hit": 1}
    assert second["inner_calls"] == 0  # compile_fx never ran
    assert "frames" not in second["dynamo"]  # nor did Dynamo trace the frame


@pytest.mark.feature("P02")
def test_strict_precompile_raises_package_error(npu_job):
    out = npu_job({"fn": "unserializable_guard", "dynamo": {**PRECOMPILE, "strict_precompile": True}})
    assert out["ok"] == []
    assert out["error"].startswith("PackageError") and "CLASS_MATCH" in out["error"]
