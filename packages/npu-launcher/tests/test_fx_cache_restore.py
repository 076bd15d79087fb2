"""Across processes through the FX graph cache (L04, C04): a first process compiles an npu
graph on npu-sim with a fresh cache dir; a second one hits the FX cache and must restore
every kernel's launch object from the descriptor in the cache entry, with no kernel loaded
from source, described again or compiled by Triton. Each run is a new process
(fx_cache_child.py), so nothing in-process can pass for the cache."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch._inductor.config

pytest.importorskip("npu_sim")
pytest.importorskip("npu_lowering")

CHILD = Path(__file__).with_name("fx_cache_child.py")


def run_child(root: Path, **env) -> dict:
    full = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(root / "inductor"),
        "NPU_LAUNCHER_CACHE_DIR": str(root / "launcher"),
        "TORCHINDUCTOR_FX_GRAPH_CACHE": "1",
        "TORCHINDUCTOR_COMPILE_THREADS": "1",
        **env,
    }
    full.pop("TRITON_CACHE_DIR", None)  # Triton's cache dir then lies under the inductor cache dir
    proc = subprocess.run(
        [sys.executable, str(CHILD)], env=full, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def delete_binaries(root: Path) -> None:
    """Triton's kernel cache dir (where the descriptor files are) and npu-launcher's sources."""
    shutil.rmtree(root / "inductor" / "triton")
    shutil.rmtree(root / "launcher", ignore_errors=True)


def assert_restored(second: dict, kernels: int) -> None:
    assert second["ok"] and second["fx_hit"] == 1
    assert second["restored"] == kernels  # every kernel object came from the cache entry
    assert (
        second["loaded_from_source"] == 0
        and second["described"] == 0
        and second["triton_compile"] == 0
    )
    assert second["static_launches"] == second["launches"] > 0  # and launched through our launcher
    assert second["launch_object_modules"] == ["npu_launcher._native"]


@pytest.mark.feature("L04")
def test_new_process_restores_launchers_from_the_fx_graph_cache(tmp_path):
    first = run_child(tmp_path)
    assert first["ok"] and first["fx_hit"] == 0 and first["saved"] == 1
    assert first["described"] == first["loaded_from_source"] > 0
    assert first["static_launches"] == first["launches"]
    assert_restored(run_child(tmp_path), first["described"])


def test_static_launch_off_bundles_nothing(tmp_path):
    off = {"TORCHINDUCTOR_USE_STATIC_CUDA_LAUNCHER": "0"}
    first = run_child(tmp_path, **off)
    second = run_child(tmp_path, **off)
    assert first["saved"] == 0 and first["static_launches"] == 0
    assert (
        second["ok"]
        and second["fx_hit"] == 1
        and second["restored"] == 0
        and second["loaded_from_source"] > 0
    )


@pytest.mark.feature("C04", "L04")
@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "keep_static_cubin_raw"),
    reason="this torch (2.11) has no Inductor flag keep_static_cubin_raw (the FX entry "
    "carries the kernel descriptors only with it)",
)
def test_descriptor_kept_in_the_entry_survives_deleting_the_binary_files(tmp_path):
    keep = {"TORCHINDUCTOR_KEEP_STATIC_CUBIN_RAW": "1"}
    first = run_child(tmp_path / "keep", **keep)
    delete_binaries(tmp_path / "keep")
    assert_restored(run_child(tmp_path / "keep", **keep), first["described"])

    # keep_static_cubin_raw off: the entry does not hold the descriptor, so with its file gone
    # the kernel is rebuilt from source (upstream's fallback), still correct
    drop = {"TORCHINDUCTOR_KEEP_STATIC_CUBIN_RAW": "0"}
    run_child(tmp_path / "drop", **drop)
    delete_binaries(tmp_path / "drop")
    second = run_child(tmp_path / "drop", **drop)
    assert second["ok"] and second["fx_hit"] == 1 and second["restored"] == 0
    assert second["loaded_from_source"] == second["described"] > 0


def test_a_corrupt_descriptor_file_is_not_used(tmp_path):
    run_child(tmp_path)
    files = list((tmp_path / "inductor" / "triton").rglob("*.npld"))
    assert files
    for f in files:
        f.write_bytes(f.read_bytes()[:-7] + b"garbage")
    second = run_child(tmp_path)
    assert second["ok"] and second["fx_hit"] == 1 and second["restored"] == 0  # rebuilt from source
    assert second["loaded_from_source"] == len(files)
