"""Child of test_direct_capi.py: one kernel of target "npu" (Ascend) launched with the same
arguments through the launch object (Python) and through the Python-free C ABI
(libnpu_launcher_direct.so, called with ctypes), against CANN's runtime from
NPU_LAUNCHER_CANN_LIBS (fake_cann.c, which logs both launches), on npu-sim's tensors; then
the direct C ABI's answers to bad input. Prints one JSON line.

    python direct_capi_child.py <folder>
"""

from __future__ import annotations

import ctypes
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402

import npu_sim  # noqa: E402
from capi_ctypes import ERR, c_args, direct_api  # noqa: E402


def main() -> None:
    folder = Path(sys.argv[1])
    npu_sim.start()
    from npu_launcher import bind
    from npu_launcher.descriptor import ArgSpec, KernelDescriptor, SpecializedArg, Target

    desc = KernelDescriptor(
        "triton_mixed_args",
        Target("npu", "Ascend910B3"),
        "npubin",
        b"\x7fELF-fake-npubin:mixed",
        (
            ArgSpec("x", "*fp32", 16),
            ArgSpec("y", "*fp16"),
            ArgSpec("n", "i32"),
            ArgSpec("m", "i64", 16),
            ArgSpec("alpha", "fp32"),
            ArgSpec("flag", "i1"),
            ArgSpec("u", "u32"),
            ArgSpec("d", "fp64"),
        ),
        extra={"mix_mode": "aiv", "ffts": True},
        specialized=(SpecializedArg(8, "one", 1),),
    )
    path = folder / "mixed.npld"
    path.write_bytes(desc.to_bytes())
    x = torch.randn(64, device="npu")
    y = torch.randn(64, device="npu").half()
    out = {"x": x.data_ptr(), "y": y.data_ptr()}

    bind(desc)(3, 2, 1, None, x, y, 64, 32, 0.5, True, 7, 2.25, 1)  # through Python

    api = direct_api()
    err = ctypes.create_string_buffer(ERR)
    k = api.load(str(path).encode(), -1, err, ERR)
    assert k, err.value
    out["num_args"] = api.num_args(k)

    def launch(*values, grid=(3, 2, 1), n=None):
        args, _keep = c_args(values)
        rc = api.launch(k, *grid, None, args, len(values) if n is None else n, err, ERR)
        return "ok" if rc == 0 else err.value.decode()

    good = (
        x,
        y,
        ctypes.c_int32(64),
        ctypes.c_int64(32),
        ctypes.c_float(0.5),
        ctypes.c_bool(True),
        ctypes.c_uint32(7),
        ctypes.c_double(2.25),
    )
    out["direct"] = launch(*good)
    bad = {
        "dtype": (x, x) + good[2:],
        "device": (x.cpu(), y) + good[2:],
        "misaligned": (x[1:], y) + good[2:],
        "divisibility": good[:3] + (ctypes.c_int64(33),) + good[4:],
        "null": (ctypes.c_void_p(None), y) + good[2:],
    }
    out["errors"] = {name: launch(*values) for name, values in bad.items()}
    out["errors"]["count"] = launch(*good, n=7)
    out["errors"]["grid"] = launch(*good, grid=(2**31, 1, 1))
    api.release(k)

    corrupt = bytearray(desc.to_bytes())
    corrupt[-1] ^= 1
    (folder / "corrupt.npld").write_bytes(bytes(corrupt))
    sim = KernelDescriptor(
        "triton_sim", Target("sim"), "triton-python", b"def f(): pass", (ArgSpec("n", "i32"),)
    )
    (folder / "sim.npld").write_bytes(sim.to_bytes())
    loads = {}
    for name in ("corrupt.npld", "sim.npld", "missing.npld"):
        h = api.load(str(folder / name).encode(), -1, err, ERR)
        loads[name] = "ok" if h else err.value.decode()
    out["loads"] = loads
    print(json.dumps(out))
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
