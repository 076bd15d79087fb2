"""test_aoti_ascend.py's processes: an AOTInductor package built as on Ascend (kernels of
flavour "ascend", triton-ascend-shaped compiles from npu-launcher's fake_triton_ascend, CANN's
runtime from NPU_LAUNCHER_CANN_LIBS: fake_cann.c, which logs every call), then served.

    python aoti_ascend_child.py package <folder>   # writes <folder>/model.pt2
    python aoti_ascend_child.py serve <folder>     # loads and runs it once
    python aoti_ascend_child.py jit <folder>       # torch.compile(cpp_wrapper=True), 3 calls

Prints one JSON line: package: the kernels compiled; serve: the output's shape and device,
whether npu-launcher's Python C ABI (npu_launcher.capi) or its launch objects were used, the
input's data pointer.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "npu-launcher" / "tests"))

import torch  # noqa: E402  (autoload: npu-sim's device "npu")

import fake_triton_ascend  # noqa: E402


class Model(torch.nn.Module):
    """One MLP block of the reference MLP8 (GEMM templates with fused epilogues, whose fusions
    upstream benchmarks) and a softmax (a reduction kernel)."""

    def __init__(self):
        super().__init__()
        self.ln = torch.nn.LayerNorm(32)
        self.fc1, self.fc2 = torch.nn.Linear(32, 64), torch.nn.Linear(64, 32)
        self.w = torch.nn.Parameter(torch.randn(32, 16))

    def forward(self, x):
        h = x + self.fc2(torch.nn.functional.gelu(self.fc1(self.ln(x))))
        return torch.softmax((h * 2).sin() @ self.w, -1) + 1


def spy_binds() -> list:
    """The launch objects made in this process, by driver."""
    import npu_launcher._native as native

    calls = []
    for name in ("bind_ascend", "bind_cuda", "bind_sim"):
        real = getattr(native, name)
        setattr(native, name, lambda *a, _n=name, _r=real, **k: (calls.append(_n), _r(*a, **k))[1])
    return calls


def package(folder: Path) -> dict:
    fake_triton_ascend.compile_as_on_ascend()
    torch.manual_seed(0)
    m = Model().to("npu")
    with torch.no_grad():
        ep = torch.export.export(m, (torch.randn(4, 32, device="npu"),))
        torch._inductor.aoti_compile_and_package(ep, package_path=str(folder / "model.pt2"))
    return {"compiled": list(fake_triton_ascend.COMPILES)}


def serve(folder: Path) -> dict:
    calls = spy_binds()
    runner = torch._inductor.aoti_load_package(str(folder / "model.pt2"))
    x = torch.randn(4, 32, device="npu")
    with torch.no_grad():
        y = runner(x)
    y = y[0] if isinstance(y, (list, tuple)) else y
    return {
        "shape": list(y.shape),
        "device": str(y.device),
        "x_ptr": x.data_ptr(),
        "python_capi_imported": "npu_launcher.capi" in sys.modules,
        "launch_objects_bound": calls,
    }


def jit(folder: Path) -> dict:
    """torch.compile with the C++ wrapper: the first call compiles each kernel in Python (its
    launch object), the C++ wrapper then loads each kernel's descriptor for its own launches."""
    fake_triton_ascend.compile_as_on_ascend()
    calls = spy_binds()
    torch._inductor.config.cpp_wrapper = True
    torch.manual_seed(0)
    m = Model().to("npu")
    fn = torch.compile(m)
    x = torch.randn(4, 32, device="npu")
    with torch.no_grad():
        fn(x)
        after_first = len(calls)
        for _ in range(2):
            y = fn(x)
    return {
        "shape": list(y.shape),
        "binds_first_call": after_first,
        "binds_later": len(calls) - after_first,
    }


if __name__ == "__main__":
    mode, folder = sys.argv[1], Path(sys.argv[2])
    print(json.dumps({"package": package, "serve": serve, "jit": jit}[mode](folder)))
