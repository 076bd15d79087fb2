"""The work record a kernel carries for the cost model (``npu_work``, kernel_work.py)."""

import ast
import re

import pytest
import torch

WORK = re.compile(r"'npu_work': (\{[^{}]*(?:\{[^{}]*\}[^{}]*)*\})")


def _works(fn, *args, **patch) -> list:
    from torch._inductor.utils import fresh_cache, run_and_get_code

    torch._dynamo.reset()
    try:
        with fresh_cache(), torch._inductor.config.patch(patch):
            _, codes = run_and_get_code(torch.compile(fn), *args)
    finally:
        torch._dynamo.reset()
    return [ast.literal_eval(w) for w in WORK.findall("\n".join(codes))]


@pytest.mark.parametrize("persistent", [False, True])
def test_a_looped_reduction_reads_its_rows_once_per_pass(npu, persistent):
    """Rows of 16 fit one block, so Inductor would make this a persistent reduction; with
    persistent reductions off it loops over each row twice (its sum, then the division),
    reading x in both passes. Persistent, x is read once."""
    x = torch.randn(4, 16, device=npu)
    (work,) = _works(
        lambda x: x / x.sum(-1, keepdim=True), x, **{"triton.persistent_reductions": persistent}
    )
    nbytes = x.numel() * x.element_size()
    reads = 1 if persistent else 2
    assert work["gm_bytes"] == reads * nbytes + nbytes  # the reads, one store


def _vector_bytes(work: dict) -> float:
    from npu_inductor_core.cost_model import work_of

    return work_of({"npu_work": work}, 1).vector_bytes


def test_statements_carry_their_dtypes_int64_priced_as_two_int32(npu):
    """The same integer arithmetic in int64 and int32: each statement is counted by the dtype
    codegen gave it (a load's and a computation's CSE variable, a store's buffer), and int64
    ones cost twice the vector time of int32 ones."""
    f = lambda x: (x * 3 + 7) * x - x  # noqa: E731
    works = {}
    for dt in (torch.int64, torch.int32):
        (works[dt],) = _works(f, torch.arange(1024, device=npu, dtype=dt))
    for w in works.values():
        assert sum(w["dtype_ops"].values()) == w["vector_ops"]
    assert works[torch.int64]["dtype_ops"].get("int64", 0) == works[torch.int64]["vector_ops"]
    assert works[torch.int32]["dtype_ops"].get("int32", 0) == works[torch.int32]["vector_ops"]
    assert works[torch.int64]["vector_ops"] == works[torch.int32]["vector_ops"]
    assert _vector_bytes(works[torch.int64]) == 2 * _vector_bytes(works[torch.int32])


@pytest.mark.parametrize("upcast", [False, True])
def test_float16_statements_cost_half_unless_upcast(npu, upcast):
    """With ``codegen_upcast_to_fp32`` off, a float16 kernel computes in float16: half the
    vector time of the same kernel in float32. Upcast (Inductor's default), only its store
    stays float16."""
    f = lambda x: torch.sigmoid(x) * x + 1  # noqa: E731
    cfg = {"triton.codegen_upcast_to_fp32": upcast}
    (single,) = _works(f, torch.randn(1024, device=npu), **cfg)
    (half,) = _works(f, torch.randn(1024, device=npu, dtype=torch.float16), **cfg)
    assert single["dtype_ops"] == {"float32": single["vector_ops"]}
    if upcast:
        assert half["dtype_ops"] == {"float16": 1, "float32": half["vector_ops"] - 1}
        assert _vector_bytes(single) > _vector_bytes(half) > 0.8 * _vector_bytes(single)
    else:
        assert half["dtype_ops"] == {"float16": half["vector_ops"]}
        assert _vector_bytes(half) == _vector_bytes(single) / 2


@pytest.mark.skipif(
    not hasattr(
        __import__("torch._inductor.codegen.simd", fromlist=["SIMDScheduling"]).SIMDScheduling,
        "_build_combo_kernel",
    ),
    reason=f"torch {torch.__version__} builds combo kernels inline: they carry no record",
)
def test_a_combo_kernel_carries_its_sub_kernels_work(npu):
    """Two row normalisations of different row counts that read a common weight, in one combo
    kernel (npu-fusion's combo kernels): its record is the two kernels' records summed, so the estimate prices the same
    bytes and vector work as the two launches, less one launch."""
    import npu_fusion.config as fusion_config

    from npu_inductor_core import cost_model

    q, k = torch.randn(5, 4, 16, device=npu), torch.randn(5, 2, 16, device=npu)
    w = torch.randn(16, device=npu)

    def norms(q, k, w):
        def rms(x):
            return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w

        return rms(q), rms(k)

    with torch.no_grad():
        (combo,) = _works(norms, q, k, w)
        with fusion_config.patch(combo_kernels=False):
            parts = _works(norms, q, k, w)
    assert len(parts) == 2
    assert combo["gm_bytes"] == sum(p["gm_bytes"] for p in parts)
    dev = cost_model.Device()
    one = cost_model.work_of({"combo_grid_meta": {"npu_work": combo}}, 1, dev)
    assert one.vector_bytes == sum(_vector_bytes(p) for p in parts) > 0
