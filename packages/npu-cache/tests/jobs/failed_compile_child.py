"""Child of test_failed_compile.py: one max-autotune GEMM on npu in a new process.

    python failed_compile_child.py fail|clean OUT.json

Both phases: a GEMM with two Triton choices (upstream's template and the swap-A/B one, M*8 <= N),
compile_threads=1. "fail": the compile fails after its choices were benchmarked (scheduling
raises). "clean": the same compile, counting the choices benchmarked. The caller points
TORCHINDUCTOR_CACHE_DIR at one folder for both.
"""

from __future__ import annotations

import json
import sys

import torch  # the backend autoloads with torch
from torch._inductor import config
from torch._inductor.scheduler import Scheduler
from torch._inductor.select_algorithm import AlgorithmSelectorCache


def main(phase: str, out_path: str) -> int:
    benchmarked = []
    real = AlgorithmSelectorCache.benchmark_choice.__func__

    def counting(cls, choice, autotune_args):
        benchmarked.append(choice.name)
        return real(cls, choice, autotune_args)

    AlgorithmSelectorCache.benchmark_choice = classmethod(counting)
    if phase == "fail":

        def broken_codegen(self):
            raise RuntimeError("injected: the compile fails after benchmarking")

        Scheduler.codegen = broken_codegen
    torch.manual_seed(0)
    a, b = torch.randn(8, 32), torch.randn(32, 128)
    flags = {
        "max_autotune_gemm": True,
        "max_autotune_gemm_backends": "TRITON",
        "compile_threads": 1,
        "test_configs.max_mm_configs": 1,
    }
    result = {"phase": phase}
    try:
        with config.patch(flags):
            out = torch.compile(torch.mm)(a.to("npu"), b.to("npu"))
        torch.testing.assert_close(out.cpu(), a @ b, atol=1e-4, rtol=1e-4)
        result["ok"] = True
    except Exception as exc:  # noqa: BLE001 - the fail phase expects one
        result["ok"] = False
        result["error"] = f"{type(exc).__name__}: {exc}"[-2000:]
    result["benchmarked"] = benchmarked
    with open(out_path, "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
