"""Rows that fit one core's UB are persistent reductions on npu (read from GM once), where
upstream keeps rows over 1024 elements a loop; their configs fit the UB by the same fact that
made them persistent (``tiles.rows_fit``). Shapes: few rows, each of an LLM's real width (the
choice is by the row's length), so the interpreter runs a handful of blocks."""

import re

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.utils import fresh_cache, run_and_get_code

from npu_inductor_core import tiles
from npu_lowering.runtime.autotuner import NpuCachingAutotuner

HIDDEN = 4096  # Llama's hidden size: a bfloat16 RMSNorm row upstream loops over


def add_rms_norm(x, residual, w):
    h = x + residual
    hf = h.float()
    return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype), h


def _inputs(tokens=8, dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(0)
    x, r = (torch.randn(tokens, HIDDEN, generator=g, dtype=dtype) for _ in range(2))
    w = torch.randn(HIDDEN, generator=g, dtype=dtype)
    return x, r, w


def _compile(fn, args, **patches):
    with inductor_config.patch(patches), fresh_cache():
        torch._dynamo.reset()
        out, codes = run_and_get_code(torch.compile(fn), *(a.to("npu") for a in args))
    return out, "\n".join(codes)


def _kernels(code: str) -> list:
    """The npu kernel objects of the generated code, each built from its source as a compile
    worker builds it (its configs after the tile generator and the body fit)."""
    from torch._inductor.codecache import PyCodeCache

    out = []
    for src in re.findall(r"async_compile\.triton\('\w+', '''(.*?)'''", code, re.S):
        mod = PyCodeCache.load(src)
        out += [v for v in vars(mod).values() if isinstance(v, NpuCachingAutotuner)]
    return out


@pytest.mark.feature("X11")
def test_a_4096_wide_rms_norm_row_is_persistent_and_its_configs_fit_the_ub():
    args = _inputs()
    (y, h), code = _compile(add_rms_norm, args)
    # one read of the row: a persistent reduction, no loop over the row
    assert "triton_per_" in code and "triton_red_" not in code, code
    assert "for r0_offset" not in code
    ref_y, ref_h = add_rms_norm(*args)
    torch.testing.assert_close(h.cpu(), ref_h)
    torch.testing.assert_close(y.cpu(), ref_y, atol=5e-2, rtol=2e-2)
    kernels = _kernels(code)
    assert kernels
    for k in kernels:
        dev = tiles.device_for(k.inductor_meta, 0)
        rn = tiles.persistent_rnumel(k.size_hints, {})
        assert rn == HIDDEN
        # the choice's fact holds for the kernel, and every config fits by it (8 rows of 4096
        # did not: bishengir needed 590 KB on the 910B2); one row fits
        pointers = len(tiles._pointers(k.triton_meta))
        assert tiles.row_kept_whole(pointers, rn, dev)
        assert k.configs
        for c in k.configs:
            assert tiles.fits_ub(c, k.triton_meta, dev, rn), c.kwargs
            assert tiles.rows_fit(pointers, tiles.block_numel(c.kwargs, rn), dev), c.kwargs
        assert min(c.kwargs["XBLOCK"] for c in k.configs) == 1


def test_upstream_flag_off_keeps_the_row_a_loop():
    _, code = _compile(add_rms_norm, _inputs(tokens=2), **{"triton.persistent_reductions": False})
    assert "triton_red_" in code and "triton_per_" not in code


def test_a_row_too_long_for_the_ub_stays_a_loop():
    # float32 rows of 16384: one row by the fact is 5 float32 rows of 64 KiB, over the UB
    x = torch.randn(2, 16384)
    out, code = _compile(lambda a: a / a.sum(-1, keepdim=True), (x,))
    assert "triton_red_" in code
    torch.testing.assert_close(out.cpu(), x / x.sum(-1, keepdim=True), atol=1e-4, rtol=1e-4)


RMS_NORM_META = {  # the 4096-token add + RMSNorm kernel's pointers: x, residual, w; h, y
    "signature": {
        **{f"in_ptr{i}": "*bf16" for i in range(3)},
        "out_ptr0": "*bf16",
        "out_ptr2": "*bf16",
        "xnumel": "i32",
        "r0_numel": "i32",
    }
}


def test_persistent_configs_hold_only_rows_that_fit():
    dev = tiles.Device()  # a 910B's UB
    hints = {"x": 4096, "r0_": HIDDEN}
    # the pointer budget (three bf16 blocks) alone lets 8 rows through
    assert tiles.block_numel({"XBLOCK": 8}, HIDDEN) <= tiles.element_budget(RMS_NORM_META, dev)
    assert not tiles.fits_ub({"XBLOCK": 8}, RMS_NORM_META, dev, HIDDEN)
    assert tiles.fits_ub({"XBLOCK": 1}, RMS_NORM_META, dev, HIDDEN)
    configs = tiles.reduction(hints, RMS_NORM_META, dev, persistent=True, exhaustive=True)
    assert {c.kwargs["XBLOCK"] for c in configs} == {1}
    # a looped reduction's configs are not priced as whole rows
    assert tiles.fits_ub({"XBLOCK": 8, "R0_BLOCK": 512}, RMS_NORM_META, dev)


def test_the_choice_and_the_config_fit_agree():
    """The choice keeps a row whole by the fact the persistent configs are fitted by
    (``tiles.rows_fit``): a row kept whole gets configs that all fit by it."""
    dev = tiles.Device()
    kept = 0
    for buffers in range(1, 12):
        for rnumel in (1024, 2048, 4096, 8192, 11008, 16384):
            row = tiles.next_power_of_2(rnumel)
            whole = tiles.row_kept_whole(buffers, rnumel, dev)
            assert whole == tiles.rows_fit(buffers, row, dev), (buffers, rnumel)
            if not whole:
                continue
            kept += 1
            meta = {"signature": {f"in_ptr{i}": "*bf16" for i in range(buffers)}}
            hints = {"x": 4096, "r0_": rnumel}
            configs = tiles.reduction(hints, meta, dev, persistent=True, exhaustive=True)
            assert configs
            for c in configs:
                assert tiles.rows_fit(buffers, c.kwargs["XBLOCK"] * row, dev), c.kwargs
                assert tiles.fits_ub(c, meta, dev, row), c.kwargs
    assert kept >= 10
    # 8-bit integer rows stay loops on 910B-class parts (bishengir's int8 conversion), not on a 950
    assert not tiles.row_kept_whole(4, 4096, dev, int8=True)
    assert tiles.row_kept_whole(4, 4096, tiles.Device(ub_bytes=256 * 1024, soc="Ascend950PR"), True)


def test_a_persistent_config_that_fits_nowhere_keeps_its_smallest_block():
    """fit_to_ub: a persistent config the body estimate rejects even at one row is kept at
    one row (bishengir planned 131,776 B for this kernel's row on the 910B2), not as it was."""
    _, code = _compile(add_rms_norm, _inputs())
    (k,) = _kernels(code)
    big = [tiles.make({"XBLOCK": x}) for x in (8, 4, 1)]
    fitted = tiles.fit_to_ub(big, k.size_hints, k.triton_meta, k.inductor_meta, k.filename)
    assert [c.kwargs for c in fitted] == [{"XBLOCK": 1}]


def test_cpu_triton_kernels_keep_upstreams_choice():
    """Loading npu's choices changes no other device's: the same 4096-wide row compiled for
    cpu with Inductor's Triton backend stays upstream's looped reduction (the code is read
    before it would run: this machine's Triton has no cpu backend)."""
    from unittest import mock

    from torch._inductor.graph import GraphLowering

    codes = []
    with (
        mock.patch.object(GraphLowering, "save_output_code", codes.append),
        inductor_config.patch(cpu_backend="triton"),
        fresh_cache(),
    ):
        torch._dynamo.reset()
        try:
            torch.compile(add_rms_norm)(*_inputs(tokens=2))
        except Exception:  # noqa: BLE001 (only the generated code is looked at)
            pass
    code = "\n".join(codes)
    assert "triton_red_" in code and "triton_per_" not in code, code
