"""AOTInductor packages on Ascend (X08, issue 22 item 3), without an NPU: a package (an MLP
block and a softmax) built as
where triton-ascend is installed (npu-launcher's fake_triton_ascend compiles; CANN's runtime is
npu-launcher's fake_cann.c, which logs every call) holds each kernel's npubin descriptor, and
its model launches them through npu-launcher's C ABI without Python (libnpu_launcher_direct.so)
into CANN's rtKernelLaunch: no Python launch object, not even the Python C ABI module, is
touched while serving. With that library refused (``NPU_LAUNCHER_DIRECT=0``) the model falls
back to the Python C ABI and launches the same kernels. The kernels' results need the NPU.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from npu_lowering import _compat

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "npu-launcher" / "tests"))
import fake_triton_ascend as fta  # noqa: E402

pytestmark = pytest.mark.skipif(
    not _compat.lazy_triton_compile_available(),
    reason="this torch (2.11) has no torch._inductor.runtime.triton_lazy_compile (npu's AOTInductor is built on it)",
)

CHILD = HERE / "aoti_ascend_child.py"
AIVEC_MAGIC, ELF_MAGIC = (
    "41415246",
    "43554245",
)  # vector-core kernels; cube + vector (GEMM templates)


def run_child(mode: str, folder: Path, cann: Path, log: Path, **env) -> dict:
    full = {
        **os.environ,
        "NPU_LAUNCHER_CANN_LIBS": str(cann),
        "FAKE_CANN_LOG": str(log),
        "TORCHINDUCTOR_CACHE_DIR": str(folder / "inductor"),
        **env,
    }
    proc = subprocess.run(
        [sys.executable, str(CHILD), mode, str(folder)],
        env=full,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "stderr": proc.stderr}


@pytest.fixture(scope="module")
def ascend_package(tmp_path_factory):
    folder = tmp_path_factory.mktemp("aoti_ascend")
    cann = fta.fake_cann_library(folder)
    built = run_child("package", folder, cann, folder / "build.log")
    return folder, cann, built


def without_pointers(hex_struct: str) -> list:
    """The packed struct's 8-byte words with host heap addresses (npu-sim's device memory)
    blanked; the C2C address (0xC2C0000) and small values stay."""
    raw = bytes.fromhex(hex_struct)
    words = struct.unpack_from(f"<{len(raw) // 8}Q", raw)
    return [None if w >= 1 << 40 else w for w in words]


def served(ascend_package, name: str, **env):
    folder, cann, built = ascend_package
    log = folder / f"{name}.log"
    out = run_child("serve", folder, cann, log, **env)
    return out, fta.read_log(log), built


@pytest.fixture(scope="module")
def direct_served(ascend_package):
    return served(ascend_package, "direct")


@pytest.mark.feature("X08")
def test_package_serves_through_the_python_free_launcher(direct_served):
    out, log, built = direct_served
    assert out["shape"] == [4, 16] and out["device"] == "npu:0"
    assert not out["python_capi_imported"] and out["launch_objects_bound"] == []
    launched = [r[1] for r in log if r[0] == "launch"]
    # each of the model's kernels (a layer norm, GEMM templates with fused epilogues, a softmax)
    # is one launch of a kernel compiled at build time
    assert len(launched) == len(set(launched)) >= 4 and set(launched) <= set(built["compiled"]), (
        launched
    )
    assert any(k.startswith("triton_tem_") for k in launched) and any(
        k.startswith("triton_per_") for k in launched
    )
    registered = [r[1] for r in log if r[0] == "register"]
    assert len(registered) == len(launched) and set(registered) == {AIVEC_MAGIC, ELF_MAGIC}
    # the served input is a pointer argument of the first kernel (the layer norm reads it)
    first = bytes.fromhex(next(r for r in log if r[0] == "launch")[5])
    assert out["x_ptr"] in struct.unpack_from(f"<{len(first) // 8}Q", first)


def test_without_the_library_the_model_falls_back_to_the_python_c_abi(
    ascend_package, direct_served
):
    _direct, direct_log, _ = direct_served
    out, log, _ = served(ascend_package, "python", NPU_LAUNCHER_DIRECT="0")
    assert out["python_capi_imported"] and out["launch_objects_bound"] == ["bind_ascend"] * len(
        {r[1] for r in direct_log if r[0] == "launch"}
    )
    assert out["shape"] == [4, 16]
    python = [r for r in log if r[0] == "launch"]
    ours = [r for r in direct_log if r[0] == "launch"]
    # same kernels, blocks and struct sizes; the packed bytes agree but for the data pointers
    # (each process has its own tensors)
    assert [r[1:4] for r in python] == [r[1:4] for r in ours]
    assert [without_pointers(r[5]) for r in python] == [without_pointers(r[5]) for r in ours]
    # a library that cannot be opened: the same fallback, said once on stderr
    missing, _, _ = served(
        ascend_package, "missing", NPU_LAUNCHER_DIRECT_LIB="/nonexistent/libnpu_launcher_direct.so"
    )
    assert not missing[
        "python_capi_imported"
    ]  # the npu-launcher that built the model is still found


@pytest.mark.feature("L06")
def test_cpp_wrapper_launches_through_the_python_free_launcher(tmp_path):
    # torch.compile(cpp_wrapper=True) on Ascend: the first call compiles and autotunes each
    # kernel in Python (launch objects), then the C++ wrapper loads each kernel's descriptor for
    # its own launches, through the library: a kernel registered with CANN without a launch
    # object being made (the capsule's load always makes one)
    cann = fta.fake_cann_library(tmp_path)
    log = tmp_path / "jit.log"
    out = run_child("jit", tmp_path, cann, log)
    assert out["shape"] == [4, 16] and out["binds_later"] == 0
    registered = sum(1 for r in fta.read_log(log) if r[0] == "register")
    loaded_by_cpp = registered - out["binds_first_call"]
    assert loaded_by_cpp >= 4, (registered, out)
