"""npu-launcher's C ABI (include/npu_launcher_capi.h), called from C through ctypes without
the GIL (as generated C++ would): load a descriptor file, launch with C arguments (tensor
arguments as AtenTensorHandle), errors as messages. The sim driver runs the kernel."""

import ctypes
import os
import sys

import torch

from npu_launcher import capi

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)  # importlib import mode: the helper module is found by path
from capi_ctypes import ERR as _ERR  # noqa: E402
from capi_ctypes import capsule_api as _api  # noqa: E402
from capi_ctypes import handle  # noqa: E402


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
    try:
        assert api.num_args(k) == 4
        x, y, out = torch.randn(100), torch.randn(100), torch.zeros(100)
        hx, hy, ho = handle(x), handle(y), handle(out)
        n = ctypes.c_int32(100)
        args = (ctypes.c_void_p * 4)(
            ctypes.addressof(hx), ctypes.addressof(hy), ctypes.addressof(ho), ctypes.addressof(n)
        )
        assert api.launch(k, 2, 1, 1, None, args, 4, err, _ERR) == 0, err.value
        torch.testing.assert_close(out, x + y)
        ((_fn, grid, sim_args, _c),) = fake_sim
        assert grid == (2, 1, 1) and sim_args[2].data_ptr() == out.data_ptr()  # the caller's memory
        # a wrong count and a wrong dtype are errors with the launch object's message
        assert api.launch(k, 2, 1, 1, None, args, 3, err, _ERR) != 0
        assert b"takes 4 arguments" in err.value
        hi = handle(torch.zeros(100, dtype=torch.int32))
        bad = (ctypes.c_void_p * 4)(
            ctypes.addressof(hx), ctypes.addressof(hy), ctypes.addressof(hi), ctypes.addressof(n)
        )
        assert api.launch(k, 2, 1, 1, None, bad, 4, err, _ERR) != 0
        assert b"KernelArgument" in err.value and b"out" in err.value
    finally:
        api.release(k)


def test_load_error_names_the_file(tmp_path):
    api = _api()
    err = ctypes.create_string_buffer(_ERR)
    assert not api.load(str(tmp_path / "missing.npld").encode(), -1, err, _ERR)
    assert b"missing.npld" in err.value
