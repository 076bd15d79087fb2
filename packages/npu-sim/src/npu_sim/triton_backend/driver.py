"""The npu-sim driver: active while npu-sim is started and no real GPU driver is. Triton's
JIT asks it for the device, stream and target of an eager launch, and for the launcher and
binary loader of the compiled kernel (SimLauncher runs it in the interpreter)."""

from __future__ import annotations

from triton.backends.compiler import GPUTarget
from triton.backends.driver import DriverBase

from .compiler import BACKEND
from .launcher import SimLauncher


def _real_gpu_present() -> bool:
    import torch

    return torch.cuda.is_available() or (hasattr(torch, "xpu") and torch.xpu.is_available())


class SimDriver(DriverBase):
    @classmethod
    def is_active(cls) -> bool:
        import sys

        sim = sys.modules.get("npu_sim")
        return bool(sim is not None and sim.is_started() and not _real_gpu_present())

    def __init__(self) -> None:
        super().__init__()
        import torch

        self.get_current_device = torch.npu.current_device
        self.set_current_device = torch.npu.set_device
        self.get_current_stream = lambda idx=None: torch.npu.current_stream(idx).stream_id
        self.launcher_cls = SimLauncher
        self.utils = SimUtils()

    def map_python_to_cpp_type(self, ty: str) -> str:
        return (
            "void*"
            if ty.startswith("*")
            else {
                "i1": "bool",
                "i32": "int32_t",
                "i64": "int64_t",
                "fp32": "float",
                "fp64": "double",
            }.get(ty, "int64_t")
        )

    def get_current_target(self) -> GPUTarget:
        return GPUTarget(BACKEND, "interpreter", 1)

    def get_active_torch_device(self):
        import torch

        return torch.device("npu", torch.npu.current_device())

    def get_device_interface(self):
        import torch

        return torch.npu

    def get_benchmarker(self):
        from triton.testing import do_bench

        return do_bench

    def get_empty_cache_for_benchmark(self):
        import torch

        return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int, device="npu")

    def clear_cache(self, cache) -> None:
        cache.zero_()


class SimUtils:
    """What CompiledKernel asks of driver.utils: there is no binary to load (the launcher runs
    the kernel's Python function), and limits that never refuse an interpreted kernel."""

    def load_binary(self, name, kernel, shared, device):
        # (module, function, n_regs, n_spills, n_max_threads)
        return name, name, 0, 0, 1 << 20

    def unload_module(self, module) -> None:
        pass

    def get_device_properties(self, device) -> dict:
        import torch

        props = torch.npu.get_device_properties(device)
        # max_shared_mem bounds metadata.shared (0 here); the UB is the nearest analogue
        return {
            "max_shared_mem": props.ub_size,
            "multiprocessor_count": props.multi_processor_count,
        }
