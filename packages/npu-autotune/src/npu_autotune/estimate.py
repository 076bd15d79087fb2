"""Benchmarks on npu-sim by the Ascend cost model, not by timing Triton's interpreter.

A benchmarked callable runs once under ``npu_inductor_core.estimated_run.estimate_call``: its
npu kernel launches are priced and not run, its ATen ops run and are priced as aclnn ops.
The result depends on the kernels and shapes only, so every decision upstream takes by timing
(autotuning, benchmark fusion, max-autotune's choices, coordinate descent) comes out the same
on any machine and load.
"""

from __future__ import annotations

from npu_inductor_core.estimated_run import estimate_call


def estimated_ms(fn) -> float:
    """The estimated NPU time of one call of ``fn``, in milliseconds (the benchmarker's unit)."""
    return estimate_call(fn).seconds * 1e3
