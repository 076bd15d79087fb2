"""What a tuning worker runs for one candidate config of an npu kernel (``autotune_in_subproc``).

``KernelBenchmarkRequest`` is the npu counterpart of upstream's ``TritonBenchmarkRequest``:
picklable (no device tensors in it), it names the kernel's module file, the config and the
arguments' shapes; in the worker it loads the module afresh, rebuilds the arguments on the
worker's device and times the config with the kernel object's own ``bench`` (upstream's
clone/restore of mutated arguments, reset-to-zero, the npu benchmarker and its flags).
"""

from __future__ import annotations

import dataclasses
import os

import torch
from npu_inductor_core import env_config as _env

# set by the pool in a worker started for one device: that device is the worker's npu:0 (the
# worker reads it as npu_autotune.config.tuning_worker_device, an internal key)
WORKER_DEVICE_ENV = "NPU_AUTOTUNE_TUNING_DEVICE"
VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"
# upstream flags the benchmark reads, carried to the worker (it has the defaults otherwise)
CARRIED_FLAGS = (
    "inductor_default_autotune_warmup",
    "inductor_default_autotune_rep",
    "use_experimental_benchmarker",
)


@dataclasses.dataclass
class TensorSpec:
    """A tensor argument: floats are random in the worker (as upstream's TensorMeta); integer
    and bool tensors keep their values (they may index other tensors)."""

    dtype: torch.dtype
    size: tuple
    stride: tuple
    offset: int
    storage_numel: int
    device_index: int
    values: torch.Tensor | None  # the whole storage on the CPU, for non-float dtypes

    @classmethod
    def of(cls, t: torch.Tensor) -> "TensorSpec":
        numel = t.untyped_storage().nbytes() // t.element_size()
        values = None
        if not (t.is_floating_point() or t.is_complex()):
            values = t.as_strided((numel,), (1,), 0).cpu()
        return cls(
            t.dtype,
            tuple(t.size()),
            tuple(t.stride()),
            t.storage_offset(),
            numel,
            t.device.index or 0,
            values,
        )

    def make(self, device: torch.device) -> torch.Tensor:
        if self.values is not None:
            flat = self.values.to(device)
        else:
            flat = torch.randn(self.storage_numel, dtype=torch.float32).to(self.dtype).to(device)
        return flat.as_strided(self.size, self.stride, self.offset)


def describe(value):
    return TensorSpec.of(value) if isinstance(value, torch.Tensor) else value


def worker_device(parent_index: int) -> torch.device:
    """The device a request runs on: npu:0 in a one-device worker, else the parent's index."""
    from . import config

    return torch.device("npu", 0 if config.tuning_worker_device is not None else parent_index)


def ready(module_path: str | None = None):
    """The job a new worker answers first: its pid, visible devices and device count.

    With ``module_path`` (the kernel module of the request the worker is started for) it loads
    that module first, so the one-time costs of a process's first kernel module are part of
    the worker's start (bounded by the pool's startup timeout), not of its first benchmark
    (bounded by ``max_autotune_subproc_result_timeout_seconds``): the modules a kernel module
    imports and the hash of torch's sources behind upstream's autotune cache key
    (``codecache.torch_key``), together ~0.35 s of the first load on this machine, more under
    load; a replacement worker's first candidate would otherwise time out and stop it too. A
    module that does not load is left to the benchmark to report."""
    if module_path:
        try:
            load_module(module_path)
        except Exception:  # the benchmark loads it again and reports the error for its candidate
            pass
    return os.getpid(), _env.text(VISIBLE_ENV), torch.npu.device_count()


def load_module(module_path: str):
    """The kernel module at ``module_path``, loaded afresh (not put in ``sys.modules``)."""
    from torch._inductor.runtime.compile_tasks import _reload_python_module

    key = os.path.splitext(os.path.basename(module_path))[0]
    return _reload_python_module(key, module_path, set_sys_modules=False)


@dataclasses.dataclass
class KernelBenchmarkRequest:
    kernel_name: str
    module_path: str
    config: object  # triton Config
    index: int  # position among the kernel's candidates (what the test hook selects by)
    args: list
    kwargs: dict
    flags: dict
    faults: object = None  # test only: worker_faults.WorkerFaults

    def __str__(self):
        return f"{self.kernel_name} config {self.index} ({self.config})"

    def benchmark(self):
        """Runs in the worker: (ms, pid, visible devices)."""
        from torch._inductor import config as inductor_config

        if self.faults is not None:
            self.faults.before(self.index)
        try:
            with inductor_config.patch(self.flags):
                timing = self._bench()
        except Exception as exc:  # the parent must be able to unpickle what it gets back
            raise RuntimeError(
                f"benchmarking {self} failed in tuning worker {os.getpid()}: "
                f"{type(exc).__name__}: {exc}"
            ) from None
        return timing, os.getpid(), _env.text(VISIBLE_ENV)

    def _bench(self) -> float:
        from . import kernel_facts
        from .sim_launcher import SimLauncher

        kernel = getattr(load_module(self.module_path), self.kernel_name)
        parent_index = next((a.device_index for a in self.args if isinstance(a, TensorSpec)), 0)
        device = worker_device(parent_index)
        props = kernel.triton_meta.get("device")
        if hasattr(props, "_replace"):  # the kernel was generated for the parent's device index
            kernel.triton_meta = {
                **kernel.triton_meta,
                "device": props._replace(index=device.index),
            }
        args = [a.make(device) if isinstance(a, TensorSpec) else a for a in self.args]
        kwargs = {
            k: v.make(device) if isinstance(v, TensorSpec) else v for k, v in self.kwargs.items()
        }
        override = None if self.faults is None else self.faults.timing(self.index)
        if override is not None:  # test only: a reported time instead of a measured one
            return float(override)
        with torch.npu.device(device.index):
            if kernel_facts.simulated(kernel):
                launcher = SimLauncher(kernel, self.config)
            else:  # compiled where the worker runs (its own Triton cache)
                kernel.configs = [self.config]
                kernel.precompile()
                launcher = kernel.launchers[0]
            return float(kernel.bench(launcher, *args, **kwargs))
