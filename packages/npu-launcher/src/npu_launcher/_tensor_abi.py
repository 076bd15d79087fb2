"""Calibrates the native launcher's tensor fast path (see csrc/tensor_access.cpp) and maps
Triton pointee types to torch dtypes and their c10 codes.

Calibration happens once per process, on a CPU probe tensor: the native side looks for the
tensor's TensorImpl address (``tensor._cdata``) in the object's C struct and checks what
libtorch_cpu's AOTInductor shim then reports against ``data_ptr()``. The dtype codes are read
through the same shim from probe tensors, never hard-coded. ``NPU_LAUNCHER_TENSOR_FAST_PATH=0``
keeps the fast path off (the slow path calls ``data_ptr()`` / ``.device`` / ``.dtype``).
"""

from __future__ import annotations

import functools
import os

from . import _compat

# c10::DeviceType numbers that cannot be probed without the device itself; CPU (0) and
# Meta are probed and must agree with this numbering, or the fast path stays off.
DEVICE_TYPE_CODES = {"cpu": 0, "cuda": 1, "meta": 14, "npu": 20, "privateuseone": 20}

TRITON_TO_TORCH = {
    "i1": "bool",
    "i8": "int8",
    "i16": "int16",
    "i32": "int32",
    "i64": "int64",
    "u8": "uint8",
    "u16": "uint16",
    "u32": "uint32",
    "u64": "uint64",
    "fp16": "float16",
    "bf16": "bfloat16",
    "fp32": "float32",
    "fp64": "float64",
    "fp8e4nv": "float8_e4m3fn",
    "fp8e5": "float8_e5m2",
    "fp8e4b8": "float8_e4m3fnuz",
    "fp8e5b16": "float8_e5m2fnuz",
}


@functools.lru_cache(maxsize=None)
def calibrate() -> tuple[bool, str]:
    """(fast path on, why not). Idempotent."""
    from . import _native

    from . import config

    # decided once, when the launcher loads (``import torch`` under autoload): in practice set
    # by $NPU_LAUNCHER_TENSOR_FAST_PATH, the key's default
    if config.tensor_fast_path is False:
        _native.disable_tensor_fast_path()
        return False, "NPU_LAUNCHER_TENSOR_FAST_PATH=0"
    import torch

    lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
    probe = torch.arange(4, dtype=torch.float32)[1:]  # a storage offset, so data_ptr is shifted
    ok, why = _native.configure_tensor_fast_path(
        _compat.tensor_base_type(), lib, probe, probe._cdata, probe.data_ptr()
    )
    if not ok:
        return False, why
    codes = _native.tensor_codes(torch.empty(0, device="meta"))
    if codes is None or codes[0] != DEVICE_TYPE_CODES["meta"]:
        _native.disable_tensor_fast_path()
        return False, f"c10 device numbering differs (meta -> {codes})"
    return True, ""


@functools.lru_cache(maxsize=None)
def dtype_for(pointee: str):
    """(torch dtype, c10 code or -1) for a Triton pointee type; (None, -1) if unknown."""
    import torch

    dt = getattr(torch, TRITON_TO_TORCH.get(pointee, ""), None)
    if dt is None:
        return None, -1
    from . import _native

    calibrate()
    codes = _native.tensor_codes(torch.empty(0, dtype=dt))
    return dt, (codes[2] if codes is not None else -1)
