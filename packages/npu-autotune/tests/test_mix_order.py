"""Mix-order reductions on npu (sibling reductions over different dimensions of one input,
one kernel) with their split size autotuned: triton.mix_order_reduction_autotune_split_size
(A55). Upstream tunes RSPLIT_SIZE in codegen by timing generated kernels; on npu the
blocks stay within the UB."""

import math
import re

import pytest
import torch
from torch._inductor import config, metrics, scheduler
from torch._inductor.runtime.hints import DeviceProperties, HeuristicType
from torch._inductor.utils import run_and_get_code

import npu_inductor_core.tiles as tiles
from npu_autotune import _compat, benchmarker
from npu_lowering.runtime import autotuner as lowering_autotuner
from npu_lowering.runtime import heuristics as npu_heuristics

BEST_SPLIT = 64  # upstream's first pick for 512 rows on 48 cores is 16


def _sums(x):
    return x.sum(0), x.sum(1)


@pytest.fixture
def split_times():
    """The npu benchmarker reports a time that is least for RSPLIT_SIZE == BEST_SPLIT (and
    grows with the log-distance from it), 0 for a callable that launched nothing."""
    launches = lowering_autotuner.LAUNCHES
    timed = []

    def fake(self, fn, *, warmup, rep, **kwargs):
        last = launches[-1] if launches else None
        fn()
        if not launches or launches[-1] is last:
            return 0.0
        split = launches[-1][2].get("RSPLIT_SIZE")
        timed.append(split)
        return 1.0 + abs(math.log2(split / BEST_SPLIT)) if split else 1.0

    _compat.register_npu_benchmarker("npu", fake)
    yield timed
    _compat.register_npu_benchmarker("npu", benchmarker.benchmark_npu)


def _compile(tune: bool):
    x = torch.randn(512, 32, device="npu")
    metrics.reset()
    with config.patch(
        {
            "compile_threads": 1,
            "triton.mix_order_reduction": True,
            "triton.mix_order_reduction_non_strict_mode": True,  # small shapes too
            "triton.mix_order_reduction_autotune_split_size": tune,
        }
    ):
        out, (code,) = run_and_get_code(torch.compile(_sums), x)
    for o, r in zip(out, _sums(x.cpu())):
        torch.testing.assert_close(o.cpu(), r, rtol=1e-4, atol=1e-4)
    assert metrics.codegen_mix_order_reduction == 1  # one kernel for both sums, on npu
    (split,) = {int(s) for s in re.findall(r"'RSPLIT_SIZE': (\d+)", code)}
    return split


def _upstream_first_split(rows: int) -> int:
    cores = DeviceProperties.create(torch.device("npu")).multi_processor_count
    return min(max(1 << (max(rows // (cores * 8), 1).bit_length() - 1), 16), 128)


@pytest.mark.skipif(
    not hasattr(scheduler, "_is_gpu_triton_backend"),
    reason="torch 2.11's MixOrderReduction.can_fuse admits only cuda/xpu, checked inline (no hook)",
)
@pytest.mark.feature("A55")
def test_mix_order_split_size_is_autotuned(fresh, split_times):
    assert _upstream_first_split(512) != BEST_SPLIT
    assert _compile(tune=True) == BEST_SPLIT
    assert {16, 32, BEST_SPLIT, 2 * BEST_SPLIT} <= set(split_times)  # walked there by timing


@pytest.mark.skipif(
    not hasattr(scheduler, "_is_gpu_triton_backend"),
    reason="torch 2.11's MixOrderReduction.can_fuse admits only cuda/xpu, checked inline (no hook)",
)
@pytest.mark.feature("A55")
def test_without_split_size_autotune_upstreams_pick_stays(fresh, split_times):
    assert _compile(tune=False) == _upstream_first_split(512)
    assert not split_times


@pytest.mark.feature("A55")
def test_mix_order_configs_fit_the_unified_buffer():
    """Upstream sets XBLOCK from the split size alone (up to 16 rows); with 16K columns
    that block overflows the UB, so on npu XBLOCK is halved until it fits."""
    size_hints = {"x": 8192, "r0_": 16384}
    triton_meta = {
        "signature": {
            "in_ptr0": "*fp32",
            "out_ptr0": "*fp32",
            "ws_ptr": "*fp32",
            "xnumel": "i32",
            "r0_numel": "i32",
        },
        "device": DeviceProperties.create(torch.device("npu")),
        "constants": {},
    }
    meta = {"RSPLIT_SIZE": 128, "kernel_name": "mix", "npu_flavour": "interpreter"}
    kernel = npu_heuristics.persistent_reduction(
        size_hints, triton_meta=triton_meta, inductor_meta=meta, filename=__file__
    )(_mix_kernel())
    dev = tiles.device(0)
    assert kernel.configs and all(c.kwargs["RSPLIT_SIZE"] == 128 for c in kernel.configs)
    assert all(tiles.fits_ub(c, triton_meta, dev, 16384) for c in kernel.configs)
    assert kernel.heuristic_type == HeuristicType.PERSISTENT_REDUCTION


def _mix_kernel():
    import triton
    import triton.language as tl

    @triton.jit
    def mix(
        in_ptr0,
        out_ptr0,
        ws_ptr,
        xnumel,
        r0_numel,
        XBLOCK: tl.constexpr,
        RSPLIT_SIZE: tl.constexpr,
        NUM_STAGES: tl.constexpr,
    ):
        pass

    return mix
