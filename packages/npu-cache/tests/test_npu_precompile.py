"""Dynamo precompile on npu (npu-sim): caching_precompile (P01) and strict_precompile (P02)."""

import pytest
import torch
import torch._inductor.config

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


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "keep_static_cubin_raw"),
    reason=f"torch {torch.__version__} has no Inductor flag keep_static_cubin_raw",
)
@pytest.mark.feature("P01")
def test_another_machine_serves_the_saved_package_without_compile_fx(npu_job, tmp_path):
    # "machine" b shares nothing with a (own HOME, Inductor, Triton and npu-cache dirs, no
    # Redis): only the artifacts a's process saved, carried over as a file
    artifacts = tmp_path / "artifacts.bin"
    # keep_static_cubin_raw: the kernels' launch descriptors travel in the package too (as in P04)
    spec = {
        "fn": "two_kernels",
        "train": True,
        "dynamo": PRECOMPILE,
        "artifacts_file": str(artifacts),
        "inductor": {"keep_static_cubin_raw": True},
    }
    first = npu_job({**spec, "save_artifacts": True}, local="a", machine="a", redis=None)
    assert first["ok"] == [True] and first["saved"] and artifacts.stat().st_size > 0
    assert first["inner_calls"] == 2
    second = npu_job({**spec, "load_artifacts": True}, local="b", machine="b", redis=None)
    assert second["loaded"] and second["ok"] == [True]
    assert second["inner_calls"] == 0 and "frames" not in second["dynamo"]
    assert second["compiled_kernels"] == {"described": 0, "triton_compile": 0}  # no kernel compiled


@pytest.mark.feature("P02")
def test_strict_precompile_raises_package_error(npu_job):
    out = npu_job(
        {"fn": "unserializable_guard", "dynamo": {**PRECOMPILE, "strict_precompile": True}}
    )
    assert out["ok"] == []
    assert out["error"].startswith("PackageError") and "CLASS_MATCH" in out["error"]
