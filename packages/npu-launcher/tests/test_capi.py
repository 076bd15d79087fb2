"""npu-launcher's C ABI (include/npu_launcher_capi.h), called from C through ctypes without
the GIL (as generated C++ would): load a descriptor file, launch with C arguments (tensor
arguments as AtenTensorHandle), errors as messages. The sim driver runs the kernel."""

import ctypes
import os

import torch

from npu_launcher import capi

_ERR = 512


class NplCApi(ctypes.Structure):
    _fields_ = [
        ("version", ctypes.c_int),
        ("load", ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)),
        ("num_args", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)),
        ("launch", ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32, ctypes.c_uint32, ctypes.c_uint32,
                                    ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_char_p,
                                    ctypes.c_size_t)),
        ("release", ctypes.CFUNCTYPE(None, ctypes.c_void_p)),
    ]


def _api() -> NplCApi:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    ptr = get(capi._C_API, b"npu_launcher.capi._C_API")
    return NplCApi.from_address(ptr)


class _Handles:
    """AtenTensorHandles of tensors (new handles, deleted at exit)."""

    def __init__(self):
        lib = os.path.join(os.path.dirname(torch.__file__), "lib", "libtorch_cpu.so")
        self._delete = ctypes.CDLL(lib).aoti_torch_delete_tensor_object
        self._delete.argtypes = [ctypes.c_void_p]
        self.made = []

    def __call__(self, t):
        get = ctypes.pythonapi.PyCapsule_GetPointer
        get.restype, get.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
        h = ctypes.c_void_p(get(torch._C._aoti.unsafe_alloc_void_ptr_from_tensor(t), None))
        self.made.append(h)
        return h

    def close(self):
        for h in self.made:
            self._delete(h)


def test_capsule_and_header(tmp_path):
    api = _api()
    assert api.version == 1
    assert os.path.exists(os.path.join(capi.header_dir(), "npu_launcher_capi.h"))


def test_load_and_launch_from_c(fake_sim, sim_add_descriptor, tmp_path):
    path = tmp_path / "add.npld"
    path.write_bytes(sim_add_descriptor.to_bytes())
    api = _api()
    err = ctypes.create_string_buffer(_ERR)
    k = api.load(str(path).encode(), -1, err, _ERR)
    assert k, err.value
    handles = _Handles()
    try:
        assert api.num_args(k) == 4
        x, y, out = torch.randn(100), torch.randn(100), torch.zeros(100)
        hx, hy, ho = handles(x), handles(y), handles(out)
        n = ctypes.c_int32(100)
        args = (ctypes.c_void_p * 4)(ctypes.addressof(hx), ctypes.addressof(hy), ctypes.addressof(ho),
                                     ctypes.addressof(n))
        assert api.launch(k, 2, 1, 1, None, args, 4, err, _ERR) == 0, err.value
        torch.testing.assert_close(out, x + y)
        (_fn, grid, sim_args, _c), = fake_sim
        assert grid == (2, 1, 1) and sim_args[2].data_ptr() == out.data_ptr()  # the caller's memory
        # a wrong count and a wrong dtype are errors with the launch object's message
        assert api.launch(k, 2, 1, 1, None, args, 3, err, _ERR) != 0
        assert b"takes 4 arguments" in err.value
        hi = handles(torch.zeros(100, dtype=torch.int32))
        bad = (ctypes.c_void_p * 4)(ctypes.addressof(hx), ctypes.addressof(hy), ctypes.addressof(hi),
                                    ctypes.addressof(n))
        assert api.launch(k, 2, 1, 1, None, bad, 4, err, _ERR) != 0
        assert b"KernelArgument" in err.value and b"out" in err.value
    finally:
        handles.close()
        api.release(k)


def test_load_error_names_the_file(tmp_path):
    api = _api()
    err = ctypes.create_string_buffer(_ERR)
    assert not api.load(str(tmp_path / "missing.npld").encode(), -1, err, _ERR)
    assert b"missing.npld" in err.value
