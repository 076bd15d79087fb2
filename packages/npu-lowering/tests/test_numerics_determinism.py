"""Deterministic modes on npu (issue 19 item 3): a reduction computed under two different
grids is bitwise equal when determinism is requested.

Upstream splits a reduction with few outputs across programs by a factor computed from the
device's core count (``reduction_split_factor``), deterministic mode included; the same
model on parts with different core counts (or batch sizes) then sums in a different order.
On npu, determinism means no split and no cooperative reduction (``npu_lowering.numerics``).
The core count is switched here through Inductor's device properties.
"""

import re

import pytest
import torch
from torch._inductor import config
from torch._inductor.runtime import hints
from torch._inductor.utils import fresh_cache, run_and_get_code

_create = hints.DeviceProperties.create
# a row too wide for one core's UB, which npu splits like upstream (a narrower one is one
# core's pass on npu whatever the core count: npu_lowering.numerics.row_fits_one_core)
ROW = 1 << 16


def _compile_with_cores(monkeypatch, cores: int, fn, *args):
    def create(cls, device):
        props = _create(device)
        return props._replace(multi_processor_count=cores) if device.type == "npu" else props

    monkeypatch.setattr(hints.DeviceProperties, "create", classmethod(create))
    torch._dynamo.reset()
    with fresh_cache():
        out, codes = run_and_get_code(torch.compile(fn), *args)
    monkeypatch.setattr(hints.DeviceProperties, "create", _create)
    code = "\n".join(codes)
    return out.cpu(), re.findall(r"(?:xnumel|r0_numel) = \d+", code)


def _row_sums_under_two_grids(monkeypatch):
    torch.manual_seed(0)
    x = torch.randn(16, ROW, device="npu") * 1000
    many = _compile_with_cores(monkeypatch, 64, lambda a: a.sum(1), x)
    few = _compile_with_cores(monkeypatch, 4, lambda a: a.sum(1), x)
    return many, few


def _check(monkeypatch):
    (out_a, shape_a), (out_b, shape_b) = _row_sums_under_two_grids(monkeypatch)
    assert shape_a == shape_b == ["xnumel = 16", f"r0_numel = {ROW}"]  # one kernel, no split
    assert torch.equal(out_a.view(torch.int32), out_b.view(torch.int32))


def test_without_determinism_the_split_follows_the_core_count(monkeypatch):
    (_, shape_a), (_, shape_b) = _row_sums_under_two_grids(monkeypatch)
    assert shape_a != shape_b  # what the tests below rely on: the grids really differ


@pytest.mark.feature("N05")
def test_deterministic_reduction_is_bitwise_equal_across_grids(monkeypatch):
    with config.patch(deterministic=True):
        _check(monkeypatch)


@pytest.mark.skipif(
    not hasattr(config, "batch_invariant"),
    reason=f"torch {torch.__version__} has no Inductor flag batch_invariant",
)
@pytest.mark.feature("N32")
def test_batch_invariant_reduction_is_bitwise_equal_across_grids_and_batches(monkeypatch):
    with config.patch(batch_invariant=True):
        _check(monkeypatch)
        torch.manual_seed(1)
        x = torch.randn(16, ROW, device="npu") * 1000
        full, _ = _compile_with_cores(monkeypatch, 48, lambda a: a.sum(1), x)
        part, _ = _compile_with_cores(monkeypatch, 48, lambda a: a.sum(1), x[:2].clone())
    assert torch.equal(full[:2].view(torch.int32), part.view(torch.int32))


@pytest.mark.feature("N20")
def test_deterministic_algorithms_reach_npu_reduction_configs():
    """PyTorch's deterministic algorithms on while Inductor's ``deterministic`` is off (they
    are set apart, e.g. by ``torch._C._set_deterministic_algorithms``): Inductor writes the
    former into each kernel's meta (``write_are_deterministic_algorithms_enabled``) and npu
    reductions then keep one config."""
    prev = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        with config.patch(deterministic=False, write_are_deterministic_algorithms_enabled=True):
            counts = _reduction_config_counts(lambda a: a.sum(1) * 5)
        assert counts and set(counts) == {1}, counts
        with config.patch(deterministic=False, write_are_deterministic_algorithms_enabled=False):
            counts = _reduction_config_counts(lambda a: a.sum(1) * 7)
        assert max(counts) > 1, counts  # not told: every candidate is tried
    finally:
        torch.use_deterministic_algorithms(prev)


@pytest.mark.feature("N05")
def test_deterministic_reductions_keep_one_config():
    """max_autotune would time every candidate and keep the fastest, whose block (and so
    summation order) may differ between runs; deterministic reductions keep one config."""
    with config.patch(deterministic=True):
        counts = _reduction_config_counts(lambda a: a.sum(1) * 3)
    assert counts and set(counts) == {1}, counts


def _reduction_config_counts(fn) -> list:
    """Compile ``fn`` with max_autotune and return the config counts of its reduction kernel
    objects, each built afresh from the generated kernel source (as a compile worker does)."""
    from torch._inductor.codecache import PyCodeCache

    from npu_lowering.runtime.autotuner import NpuCachingAutotuner

    # float32 rows of 16384: one core's (not split across programs), too long to keep whole
    # in its UB (not persistent): a looped reduction on npu
    x = torch.randn(8, 1 << 14, device="npu")
    with config.patch(max_autotune=True), fresh_cache():
        torch._dynamo.reset()
        out, codes = run_and_get_code(torch.compile(fn), x)
    torch.testing.assert_close(out.cpu(), fn(x.cpu()), atol=1e-2, rtol=1e-4)
    counts = []
    for src in re.findall(
        r"async_compile\.triton\('triton_red_\w+', '''(.*?)'''", "\n".join(codes), re.S
    ):
        mod = PyCodeCache.load(src)
        counts += [len(v.configs) for v in vars(mod).values() if isinstance(v, NpuCachingAutotuner)]
    return counts


@pytest.mark.feature("N05")
def test_deterministic_reduction_on_ascend_keeps_the_first_config_that_compiles():
    """On Ascend bishengir may refuse a config for the UB (ub_fit.py drops it): the kernel
    keeps upstream's deterministic pick first and then the first config that compiles, the
    same on every run, instead of timing the survivors. npu-sim runs the pick alone."""
    import triton
    import triton.language as tl
    from torch._inductor.runtime.hints import DeviceProperties, HeuristicType
    from triton import Config
    from triton.runtime.errors import OutOfResources

    from npu_lowering.runtime.autotuner import NpuCachingAutotuner

    @triton.jit
    def kernel(x, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
        pass

    class Kernel(NpuCachingAutotuner):
        def _precompile_config(self, cfg):  # what UbFitMixin makes of bishengir's "ub overflow"
            if cfg.kwargs["R0_BLOCK"] >= 1024:
                raise OutOfResources(2163200, 1572864, "unified buffer bits")
            return ("compiled", cfg.kwargs["R0_BLOCK"])

    def build(flavour, deterministic):
        configs = [
            Config({"XBLOCK": 8, "R0_BLOCK": r}, num_warps=1) for r in (2048, 1024, 512, 256, 128)
        ]
        meta = {"kernel_name": "k", "npu_flavour": flavour, "deterministic": deterministic}
        k = Kernel(
            kernel,
            triton_meta={
                "signature": {"x": "*fp32"},
                "constants": {},
                "device": DeviceProperties.create(torch.device("npu", 0)),
            },
            configs=configs,
            save_cache_hook=None,
            mutated_arg_names=[],
            optimize_mem=True,
            heuristic_type=HeuristicType.REDUCTION,
            size_hints={"x": 8, "r0_": 4096},
            inductor_meta=meta,
        )
        k.tuning = None  # the lowering's own precompile: no tuning part (npu-autotune's budgets all configs)
        return k

    ascend = build("ascend", True)
    assert [c.kwargs["R0_BLOCK"] for c in ascend.configs] == [
        1024,
        2048,
        512,
        256,
        128,
    ]  # upstream's pick first
    ascend._precompile_worker()
    assert [r[1] for r in ascend.compile_results] == [512]
    assert [c.kwargs["R0_BLOCK"] for c in build("interpreter", True).configs] == [1024]
    free = build("ascend", False)
    free._precompile_worker()
    assert [r[1] for r in free.compile_results] == [512, 256, 128]  # left to tuning
