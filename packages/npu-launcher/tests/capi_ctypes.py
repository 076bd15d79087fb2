"""npu-launcher's C ABI table (include/npu_launcher_capi.h) through ctypes, for the tests that
call it as C would: the capsule's (Python) and the Python-free library's, and tensors as
AtenTensorHandles."""

from __future__ import annotations

import ctypes

import torch

ERR = 1024


class NplCApi(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int),
        (
            "load",
            ctypes.CFUNCTYPE(
                ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t
            ),
        ),
        ("num_args", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
        (
            "launch",
            ctypes.CFUNCTYPE(
                ctypes.c_int,
                ctypes.c_void_p,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_uint32,
                ctypes.c_void_p,
                ctypes.POINTER(ctypes.c_void_p),
                ctypes.c_int,
                ctypes.c_char_p,
                ctypes.c_size_t,
            ),
        ),
        ("release", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
    ]


def _capsule_pointer(capsule, name):
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, name)


def capsule_api() -> NplCApi:
    from npu_launcher import capi

    return NplCApi.from_address(_capsule_pointer(capi._C_API, b"npu_launcher.capi._C_API"))


def direct_api() -> NplCApi:
    from npu_launcher import capi

    lib = ctypes.CDLL(capi.direct_library())
    lib.npl_direct_api.restype = ctypes.POINTER(NplCApi)
    return lib.npl_direct_api().contents


def handle(t: torch.Tensor) -> ctypes.c_void_p:
    """A new AtenTensorHandle of ``t`` (leaked: tests are short processes)."""
    return ctypes.c_void_p(
        _capsule_pointer(torch._C._aoti.unsafe_alloc_void_ptr_from_tensor(t), None)
    )


def c_args(values) -> tuple:
    """The C ABI's ``void **args`` for ``values`` (tensors become handles, ctypes scalars stay):
    (array, the objects it points into, kept alive by the caller)."""
    keep = [handle(v) if isinstance(v, torch.Tensor) else v for v in values]
    array = (ctypes.c_void_p * len(keep))(*[ctypes.addressof(v) for v in keep])
    return array, keep
