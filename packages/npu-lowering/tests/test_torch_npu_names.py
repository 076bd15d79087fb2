"""Names the npu wrapper calls on Ascend, checked in the torch_npu 2.13.0 wheel without
importing it (no NPU here): the C stream getter ``runtime/device.py`` imports is in
the method table of torch_npu's ``_C`` and is what torch_npu's own Inductor imports."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

CACHES = [
    Path(p)
    for p in (
        os.environ.get("NPU_LOWERING_WHEEL_CACHE"),
        os.environ.get("NPU_LAUNCHER_WHEEL_CACHE"),
    )
    if p
] + [Path.home() / ".cache" / "npu_launcher" / "wheels"]


@pytest.fixture(scope="module")
def wheel():
    for cache in CACHES:
        hits = sorted(cache.glob("torch_npu-2.13.0-*.whl"))
        if hits:
            return zipfile.ZipFile(hits[0])
    cache = CACHES[-1]
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "-q",
            "--no-deps",
            "--only-binary=:all:",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
            "--platform",
            "manylinux_2_28_x86_64",
            "-d",
            str(cache),
            "torch_npu==2.13.0",
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    hits = sorted(cache.glob("torch_npu-2.13.0-*.whl"))
    if not hits:
        pytest.skip(f"torch_npu 2.13.0 wheel not available: {proc.stderr[-500:]}")
    return zipfile.ZipFile(hits[0])


def test_raw_stream_getter_exists_in_torch_npu(wheel):
    source = Path(__file__).resolve().parents[1] / "src" / "npu_lowering" / "runtime" / "device.py"
    name = "_npu_getCurrentRawStream"
    assert f"from torch_npu._C import {name} as get_raw_stream" in source.read_text()
    # torch_npu._C's method table (names as C strings) is built in libtorch_npu.so
    assert name.encode() + b"\0" in wheel.read("torch_npu/lib/libtorch_npu.so")
    own = wheel.read("torch_npu/_inductor/lowering_fx.py").decode()
    assert f"from torch_npu._C import {name} as get_raw_stream" in own
