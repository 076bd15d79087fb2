"""A combo kernel with per-sub-kernel blocks under npu-lowering's own heuristics (what an
install without a tuning component, and the Ascend check, runs): upstream builds its
decorator even when asked for configs, so the kernel object is upstream's, adopted as npu's."""

import torch
from torch._inductor import config
from torch._inductor.utils import run_and_get_code

from npu_inductor_core import kernel_objects
from npu_lowering.runtime import heuristics
from npu_lowering.runtime.autotuner import NpuCachingAutotuner


def _pair(a, b):
    return torch.sin(a) + 1, torch.cos(b) * 2


def test_npu_lowerings_heuristics_build_a_per_subkernel_combo(monkeypatch, tmp_path):
    a, b = (torch.randn(256, device="npu") for _ in range(2))
    torch._dynamo.reset()
    with config.patch(combo_kernels=True, combo_kernel_per_subkernel_blocks=True):
        _, codes = run_and_get_code(torch.compile(_pair), a, b)
    source = next(c for c in codes if "combo_grid_meta" in c and "noinline=True" in c)
    start = source.index("'''", source.index("async_compile.triton(")) + 3
    module = source[start : source.index("'''", start)]
    path = tmp_path / "combo_kernel.py"
    path.write_text(module)
    # npu-lowering's decorators only (no tuning component's registered over them)
    monkeypatch.setattr(kernel_objects, "heuristic", lambda device, name: heuristics.DEFAULTS[name])
    namespace = {"__file__": str(path)}
    exec(compile(module, str(path), "exec"), namespace)
    kernels = [v for v in namespace.values() if isinstance(v, NpuCachingAutotuner)]
    assert len(kernels) == 1 and kernels[0].configs
