"""The C ABI without Python (libnpu_launcher_direct.so, csrc/direct.cpp; issue 22): a process
serving an AOTInductor package on Ascend launches kernels with no interpreter. Without an NPU
the CANN runtime is fake_cann.c, which logs each launch's packed argument struct: the direct
path must hand CANN the same bytes as the launch object does, refuse bad input with the
launch object's kind of message, and run in a process where neither Python nor torch exists.
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

from npu_launcher import capi

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # importlib import mode: the helper module is found by path
import fake_triton_ascend as fta  # noqa: E402


@pytest.fixture(scope="module")
def fake_cann(tmp_path_factory) -> Path:
    return fta.fake_cann_library(tmp_path_factory.mktemp("fake_cann"))


def _env(cann: Path, log: Path) -> dict:
    return {**os.environ, "NPU_LAUNCHER_CANN_LIBS": str(cann), "FAKE_CANN_LOG": str(log)}


def test_library_needs_no_python_and_exports_one_symbol():
    lib = capi.direct_library()
    assert os.path.exists(lib), lib
    readelf, nm = shutil.which("readelf"), shutil.which("nm")
    if readelf is None or nm is None:
        pytest.skip("binutils (readelf, nm) not installed")
    needed = subprocess.run([readelf, "-d", lib], capture_output=True, text=True, check=True).stdout
    assert "NEEDED" in needed and "python" not in needed.lower() and "torch" not in needed.lower()
    undefined = subprocess.run(
        [nm, "-D", "--undefined-only", lib], capture_output=True, text=True, check=True
    ).stdout
    assert not [s for s in undefined.split() if s.startswith(("Py", "_Py", "aoti_torch"))]
    defined = subprocess.run(
        [nm, "-D", "--defined-only", lib], capture_output=True, text=True, check=True
    ).stdout
    assert [line.split()[-1] for line in defined.splitlines() if line.split()[1] == "T"] == [
        "npl_direct_api"
    ]


def test_direct_launch_packs_what_the_launch_object_packs(fake_cann, tmp_path):
    log = tmp_path / "cann.log"
    proc = subprocess.run(
        [sys.executable, str(HERE / "direct_capi_child.py"), str(tmp_path)],
        env=_env(fake_cann, log),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["num_args"] == 8 and out["direct"] == "ok"
    launches = [r for r in fta.read_log(log) if r[0] == "launch"]
    # the Python launch, the direct one, then the direct launch with a null pointer
    assert len(launches) == 3, launches
    python, direct = launches[0], launches[1]
    assert python[1:] == direct[1:], (
        python,
        direct,
    )  # same function, blockDim, size, stream, bytes
    assert int(direct[2]) == 3 * 2 * 1
    raw = bytes.fromhex(direct[5])
    # C2C control address, syncBlockLock + workspace, then x, y (pointers), n (i32), m (i64),
    # alpha (float), flag (i1 as int32), u (u32), d (fp64), gridX/Y/Z
    c2c, _lock, _ws, x, y, n, m, alpha, flag, u, d, gx, gy, gz = struct.unpack_from(
        "<QQQQQi4xqfiI4xdiii", raw
    )
    assert (c2c, x, y, n, m, alpha, flag, u, d, (gx, gy, gz)) == (
        0xC2C0000,
        out["x"],
        out["y"],
        64,
        32,
        0.5,
        1,
        7,
        2.25,
        (3, 2, 1),
    )
    null = bytes.fromhex(launches[2][5])
    assert struct.unpack_from("<Q", null, 24)[0] == 0 and null[32:] == raw[32:]

    errors = out["errors"]
    assert "argument 'y' (#1): tensor dtype is" in errors["dtype"]
    assert (
        "tensor dtype is torch.float32, the kernel was compiled for *fp16 (torch.float16)"
        in errors["dtype"]
    )
    assert "argument 'x' (#0): tensor is on cpu, the kernel runs on npu:0" in errors["device"]
    assert (
        "argument 'x' (#0)" in errors["misaligned"]
        and "not 16-byte aligned" in errors["misaligned"]
    )
    assert "argument 'm' (#3): 33 is not a multiple of 16" in errors["divisibility"]
    assert errors["null"] == "ok"
    assert "takes 8 arguments, the C call passed 7" in errors["count"]
    assert "grid 2147483648 is not in [0, 2**31)" in errors["grid"]
    loads = out["loads"]
    assert "truncated or corrupt" in loads["corrupt.npld"]
    assert "targets 'sim'" in loads["sim.npld"] and "Triton's interpreter" in loads["sim.npld"]
    assert "cannot open kernel descriptor" in loads["missing.npld"]


def test_a_process_without_python_or_torch_launches(fake_cann, tmp_path):
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        pytest.skip("no C compiler")
    from npu_launcher.descriptor import ArgSpec, KernelDescriptor, Target

    exe = tmp_path / "serve_without_python"
    subprocess.run(
        [
            cc,
            "-O1",
            "-rdynamic",
            "-I",
            capi.header_dir(),
            "-o",
            str(exe),
            str(HERE / "direct_c" / "serve_without_python.c"),
            "-ldl",
        ],
        check=True,
        capture_output=True,
    )
    desc = KernelDescriptor(
        "triton_add",
        Target("npu", "Ascend910B3"),
        "npubin",
        b"\x7fELF-fake-npubin:add",
        (ArgSpec("x", "*fp32", 16), ArgSpec("n", "i32")),
        extra={"mix_mode": "aiv"},
    )
    path = tmp_path / "add.npld"
    path.write_bytes(desc.to_bytes())
    log = tmp_path / "cann.log"
    env = {k: v for k, v in _env(fake_cann, log).items() if not k.startswith("PYTHON")}
    proc = subprocess.run(
        [str(exe), capi.direct_library(), str(path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines())
    assert lines["python_mapped"] == "0"
    assert (
        "tensor dtype is torch.float16, the kernel was compiled for *fp32 (torch.float32)"
        in lines["refused"]
    )
    calls = fta.read_log(log)
    assert [r[0] for r in calls] == ["set_device", "register", "function", "launch"]
    assert calls[1][1] == "41415246"  # RT_DEV_BINARY_MAGIC_ELF_AIVEC: a vector-core kernel
    _name, block_dim, _size, stream, raw = calls[3][1:]
    assert int(block_dim) == 4 and int(stream) == 5
    assert struct.unpack_from("<Q", bytes.fromhex(raw), 24)[0] == int(lines["launched"])


def _load_direct(path):
    import ctypes

    from capi_ctypes import ERR, direct_api

    api = direct_api()
    err = ctypes.create_string_buffer(ERR)
    return api, api.load(str(path).encode(), 0, err, ERR), err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="a CUDA driver is present")
def test_cuda_descriptor_without_a_driver_is_refused(cuda_add_kernel, tmp_path, monkeypatch):
    from npu_launcher import descriptor_from_compiled

    path = tmp_path / "add.npld"
    path.write_bytes(descriptor_from_compiled(cuda_add_kernel).to_bytes())
    api, k, err = _load_direct(path)
    assert not k and b"cuda driver unavailable" in err.value, err.value


@pytest.mark.skipif(not __import__("torch").cuda.is_available(), reason="needs a CUDA device")
def test_cuda_launch_through_the_python_free_library(kernels, tmp_path):
    # the proxy for Ascend's Python-free launch on real hardware: a cubin descriptor of Triton's
    # own JIT compile, launched from the C ABI library on torch's current stream
    import ctypes

    import torch

    from capi_ctypes import ERR, c_args
    from npu_launcher import descriptor_from_compiled

    x = torch.randn(4000, device="cuda")
    ck = kernels.add_kernel[(4,)](x, x, torch.empty_like(x), 4000, BLOCK=1024)
    path = tmp_path / "add.npld"
    path.write_bytes(descriptor_from_compiled(ck).to_bytes())
    api, k, err = _load_direct(path)
    assert k, err.value
    y, out = torch.randn(4000, device="cuda"), torch.zeros(4000, device="cuda")
    args, _keep = c_args((x, y, out, ctypes.c_int32(4000)))
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    assert api.launch(k, 4, 1, 1, stream, args, 4, err, ERR) == 0, err.value
    torch.cuda.synchronize()
    torch.testing.assert_close(out, x + y)
    bad, _keep2 = c_args((x.cpu(), y, out, ctypes.c_int32(4000)))
    assert (
        api.launch(k, 4, 1, 1, stream, bad, 4, err, ERR) != 0 and b"tensor is on cpu" in err.value
    )
    api.release(k)
