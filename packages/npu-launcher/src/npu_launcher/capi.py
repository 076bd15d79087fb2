"""The C ABI for generated C++ (include/npu_launcher_capi.h): importing this module creates
the capsule ``_C_API`` that ``PyCapsule_Import("npu_launcher.capi._C_API", 0)`` returns.

``header_dir()`` is the folder holding ``npu_launcher_capi.h`` (for ``-I``);
``bind_file(path, device)`` is what the C ABI's ``load`` calls.
``direct_library()`` is the path of ``libnpu_launcher_direct.so``: the same C ABI without
Python (``npl_direct_api()``), for cuda and Ascend kernels.
"""

from __future__ import annotations

import os

import torch

from . import _native, _tensor_abi
from .launcher import bind


def header_dir() -> str:
    return os.path.join(os.path.dirname(__file__), "include")


def direct_library() -> str:
    """The Python-free C ABI library, installed next to the extension (in an editable install
    the build's site-packages copy, not the source tree)."""
    return os.path.join(os.path.dirname(_native.__file__), "libnpu_launcher_direct.so")


def bind_file(path: str, device: int):
    """The launch object of the descriptor file at ``path`` on ``device`` (-1: unbound index)."""
    with open(path, "rb") as f:
        blob = f.read()
    return bind(blob, None if device < 0 else device)


_tensor_abi.calibrate()  # the launch objects' tensor checks (also done by bind)
# torch's constructor of a tensor from an owned AtenTensorHandle, and the shim library
_C_API = _native.capi_capsule(
    torch._C._aoti.alloc_tensor_by_stealing_from_void_ptr,
    os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so"),
)
