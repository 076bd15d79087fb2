"""On Ascend, npu kernels compiled by triton-ascend launch through npu-launcher's ascend
driver (L04), without hardware: a child process compiles on npu-sim's device with kernels of
flavour "ascend", ``triton.compile`` answers with triton-ascend-shaped CompiledKernels
(fake_triton_ascend.py) and CANN's runtime is fake_cann.c, which logs every call. The log
shows what a real NPU would be asked to do: binaries registered (vector-core ELFs, and cube +
vector ELFs for GEMM templates), one function per kernel, and each launch's packed argument
struct (the C2C control address, two reserved words, the kernel arguments, the grid), which
the tests decode against the tensors.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest
import torch._inductor.config

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # importlib import mode: the helper module is found by path
import fake_triton_ascend as fta  # noqa: E402

CHILD = HERE / "ascend_route_child.py"
AIVEC_MAGIC = "41415246"  # RT_DEV_BINARY_MAGIC_ELF_AIVEC: vector-core kernels ("aiv")
ELF_MAGIC = "43554245"  # RT_DEV_BINARY_MAGIC_ELF: cube + vector kernels ("mix": GEMM templates)
C2C_ADDR = 0xC2C0000  # what fake_cann.c's rtGetC2cCtrlAddr answers


@pytest.fixture(scope="module")
def fake_cann(tmp_path_factory) -> Path:
    try:
        return fta.fake_cann_library(tmp_path_factory.mktemp("fake_cann"))
    except (RuntimeError, subprocess.CalledProcessError) as exc:
        pytest.fail(f"cannot build the fake CANN runtime: {exc}")


def run_child(
    tmp_path: Path, *flags, cann: Path | None, cache: Path | None = None, **env
) -> tuple[dict, list]:
    log = tmp_path / f"cann-{len(list(tmp_path.glob('cann-*')))}.log"
    inductor = cache or tmp_path / "inductor"
    # Triton's cache dir inside the Inductor one (whatever the suite's environment says), so a
    # test can delete the binaries' files
    child_env = {
        **os.environ,
        "TORCHINDUCTOR_CACHE_DIR": str(inductor),
        "TRITON_CACHE_DIR": str(inductor / "triton"),
        "FAKE_CANN_LOG": str(log),
        **env,
    }
    child_env.pop("NPU_LAUNCHER_CANN_LIBS", None)
    if cann is not None:
        child_env["NPU_LAUNCHER_CANN_LIBS"] = str(cann)
    proc = subprocess.run(
        [sys.executable, str(CHILD), *flags],
        env=child_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), fta.read_log(log)


def launches(log, name=None) -> list[tuple[str, int, bytes]]:
    return [
        (r[1], int(r[2]), bytes.fromhex(r[5]))
        for r in log
        if r[0] == "launch" and (name is None or r[1] == name)
    ]


def registered(log) -> dict[str, str]:
    """device function name -> magic of the binary registered just before it."""
    out, magic = {}, None
    for r in log:
        if r[0] == "register":
            magic, head = r[1], bytes.fromhex(r[3])
            assert head == fta.NPUBIN_MAGIC[:16]  # the stand-in's npubin (fake_cann logs 16 bytes)
        elif r[0] == "function":
            out[r[2]] = magic
    return out


@pytest.mark.feature("L04")
def test_kernels_compiled_by_triton_ascend_launch_through_cann(tmp_path, fake_cann):
    out, log = run_child(tmp_path, cann=fake_cann)
    assert "error" not in out, out["error"]
    kernels = registered(log)
    template = next(n for n in kernels if "_tem_" in n)  # the small matmul, x * 2 and sin fused in
    reduction = next(n for n in kernels if "_per_" in n or "_red_" in n)
    assert kernels == {template: ELF_MAGIC, reduction: AIVEC_MAGIC}, kernels
    # every kernel of the last call is a promoted direct-launch slot: one C call, into CANN
    assert set(out["promoted"]) == set(kernels), (out["promoted"], kernels)
    assert out["launch_types"] == ["npu_launcher._native"]
    for name in kernels:
        _, block_dim, args = launches(log, name)[-1]
        fields, (gx, gy, gz) = unpack(args, out["arg_types"][name])
        assert struct.unpack_from("<Q", args, 0)[0] == C2C_ADDR
        assert block_dim == gx * gy * gz >= 1  # triton-ascend flattens the grid into blockDim
    assert out["x_ptr"] in unpack(launches(log, template)[-1][2], out["arg_types"][template])[0]
    assert out["y_ptr"] in unpack(launches(log, reduction)[-1][2], out["arg_types"][reduction])[0]


def unpack(args: bytes, types: list[str]) -> tuple[list, tuple]:
    """The kernel arguments and grid of triton-ascend's packed struct (layout from the
    driver's own rule, which test_drivers checks against the struct triton-ascend writes)."""
    from npu_launcher import _native
    from npu_launcher.launcher import KINDS

    offsets, grid_offset, size = _native.ascend_layout(
        [KINDS["*" if t.startswith("*") else t] for t in types], True, False
    )
    assert size == len(args)
    fmt = {"i32": "<i", "i64": "<q", "fp32": "<f", "fp64": "<d", "i1": "<i"}
    fields = [
        struct.unpack_from("<Q" if t.startswith("*") else fmt[t], args, off)[0]
        for t, off in zip(types, offsets)
    ]
    return fields, struct.unpack_from("<3i", args, grid_offset)


@pytest.mark.feature("L04")
def test_static_launch_off_keeps_tritons_launcher(tmp_path, fake_cann):
    out, log = run_child(tmp_path, "--static-off", cann=fake_cann)
    assert out["max_error"] < 1e-4  # Triton's launcher runs the kernels (npu-sim's run)
    assert not launches(log) and not registered(log)


@pytest.mark.feature("L01")
def test_without_a_cann_runtime_falls_back_or_raises_when_strict(tmp_path):
    out, log = run_child(tmp_path, cann=None)
    assert "error" not in out, out["error"]
    assert out["max_error"] < 1e-4 and not out["promoted"]  # Triton's launcher, correct results
    out, _ = run_child(tmp_path, "--strict", cann=None, cache=tmp_path / "strict")
    assert (
        "cannot be launched statically" in out["error"]
        and "ascend driver unavailable" in out["error"]
    )
    assert "triton_" in out["error"]  # names the kernel


@pytest.mark.feature("L01")
def test_a_binary_for_another_soc_is_refused(tmp_path, fake_cann):
    out, log = run_child(tmp_path, "--strict", cann=fake_cann, FAKE_CANN_SOC="Ascend910B4")
    assert "was compiled for Ascend910B3 but npu:0 is Ascend910B4" in out["error"], out
    assert not launches(log)
    out, log = run_child(
        tmp_path, cann=fake_cann, cache=tmp_path / "lenient", FAKE_CANN_SOC="Ascend910B4"
    )
    assert out["max_error"] < 1e-4 and not launches(log)


@pytest.mark.feature("L01")
def test_a_kernel_the_launcher_cannot_describe_keeps_tritons_launcher(tmp_path, fake_cann):
    simt = {"FAKE_TRITON_ASCEND_PARALLEL_MODE": "mix_simd_simt"}  # SIMT launch: not supported yet
    out, log = run_child(tmp_path, cann=fake_cann, **simt)
    assert out["max_error"] < 1e-4 and not registered(log) and not out["arg_types"]
    out, _ = run_child(tmp_path, "--strict", cann=fake_cann, cache=tmp_path / "strict", **simt)
    assert "cannot be launched statically" in out["error"] and "SIMT" in out["error"], out


@pytest.mark.feature("L08")
def test_user_triton_kernels_launch_through_cann_when_allowed(tmp_path, fake_cann):
    out, log = run_child(tmp_path, "--user-kernel", cann=fake_cann)
    assert "error" not in out, out["error"]
    assert "add_scaled" in registered(log) and launches(log, "add_scaled")
    fields, grid = unpack(launches(log, "add_scaled")[-1][2], out["arg_types"]["add_scaled"])
    assert fields[2:] == [4 * 16, 3.0] and grid == (1, 1, 1)  # n, alpha; cdiv(64, 64) programs
    out, log = run_child(tmp_path, "--user-kernels-off", cann=fake_cann, cache=tmp_path / "off")
    assert "error" not in out, out["error"]
    assert "add_scaled" not in registered(log) and registered(log)  # Inductor's kernels still do


@pytest.mark.skipif(
    not hasattr(torch._inductor.config, "keep_static_cubin_raw"),
    reason="this torch (2.11) has no Inductor flag keep_static_cubin_raw (the FX entry "
    "carries the kernel descriptors only with it)",
)
@pytest.mark.feature("C04")
def test_a_new_process_restores_launchers_from_the_fx_cache_without_triton(tmp_path, fake_cann):
    cache = tmp_path / "shared"
    first, log1 = run_child(tmp_path, cann=fake_cann, cache=cache)
    assert first["compiled"], "the first process compiles with triton-ascend"
    shutil.rmtree(cache / "triton")  # the binaries' files: the cache entry must carry them
    second, log2 = run_child(tmp_path, cann=fake_cann, cache=cache)
    assert "error" not in second, second["error"]
    assert second["compiled"] == []  # no triton-ascend compile in the new process
    assert set(registered(log2)) == set(second["promoted"]) and launches(log2)
