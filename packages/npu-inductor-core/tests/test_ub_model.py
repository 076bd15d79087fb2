"""The body-aware UB model (issue 17 item 2): what it reads from a kernel body, and that the
heuristics' configs are shrunk until they fit."""

from __future__ import annotations

import ast
import textwrap

import pytest
from npu_inductor_core import ub_model as M
from npu_inductor_core import ub_liveness, ub_profile
from npu_inductor_core.ascend_rules import fit_to_ub, soc_family

POINTWISE = """
def k(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    tmp0 = tl.load(in_ptr0 + (xindex), xmask)
    tmp1 = tmp0 * tmp0
    tmp2 = tmp1 + tmp0
    tl.store(out_ptr0 + (xindex), tmp2, xmask)
"""

SOFTMAX = """
def k(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    xnumel = 64
    r0_numel = 300
    R0_BLOCK: tl.constexpr = 512
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    tmp0 = tl.load(in_ptr0 + (r0_index + 300*xindex), r0_mask & xmask, other=0.0)
    tmp3 = tl.where(r0_mask & xmask, tmp0, float("-inf"))
    tmp4 = triton_helpers.max2(tmp3, 1)[:, None]
    tmp5 = tmp0 - tmp4
    tmp6 = tl.exp(tmp5)
    tmp9 = tl.where(r0_mask & xmask, tmp6, 0)
    tmp10 = tl.sum(tmp9, 1)[:, None]
    tmp11 = tmp6 / tmp10
    tl.store(out_ptr0 + (r0_index + 300*xindex), tmp11, r0_mask & xmask)
"""


def _profile(body: str, **pointers) -> dict:
    return M.profile(textwrap.dedent(body), pointers or {"in_ptr0": "fp32", "out_ptr0": "fp32"})


def test_live_values_set_the_peak_not_the_pointer_count():
    prof = _profile(POINTWISE)
    # the loaded block, its square and the sum live together at the add: three fp32 blocks
    # (and the index and mask), where the old model counted one block per pointer, two
    by = max(M.class_bytes(prof, {"XBLOCK": 1024}), key=lambda b: b["v"] + b["l"])
    assert by["l"] == 4096 and by["v"] >= 2 * 4096
    # the tiles grow with the block, the fixed part does not
    e = [M.estimate(prof, {"XBLOCK": x}) for x in (512, 1024, 2048)]
    assert abs((e[2] - e[1]) - 2 * (e[1] - e[0])) <= 2 and e[1] - e[0] >= 4 * 512 * 4


def test_a_persistent_reduction_is_priced_with_its_whole_row():
    prof = _profile(SOFTMAX)
    assert prof["blocks"] == {"R0_BLOCK": 512}
    # four more rows cost at least four more fp32 rows of 512
    assert M.estimate(prof, {"XBLOCK": 8}) - M.estimate(prof, {"XBLOCK": 4}) >= 4 * 512 * 4
    # reduced values are rows ([XBLOCK, 1]): one 32-byte block a row, not a whole tile
    keys = {k for p in prof["points"] for k in p}
    assert "v|X,1:4" in keys and "l|X,R0:4" in keys


def test_a_mask_that_only_bounds_a_transfer_costs_its_bits():
    bounded = _profile(POINTWISE.replace("tmp2 = tmp1 + tmp0", "tmp2 = tmp1 + tmp0"))
    assert any(k.startswith("k|") for p in bounded["points"] for k in p)
    # selected with (tl.where), a two-dimensional mask is materialized as a float16 broadcast
    prof = _profile(SOFTMAX)
    assert any(k.startswith("v|X,R0:1b") for p in prof["points"] for k in p)


def test_a_strided_innermost_dimension_takes_a_block_an_element():
    contiguous = _profile(POINTWISE)
    strided = _profile(
        POINTWISE.replace("tl.load(in_ptr0 + (xindex)", "tl.load(in_ptr0 + (16*xindex)")
    )
    assert (
        M.estimate(strided, {"XBLOCK": 1024})
        >= M.estimate(contiguous, {"XBLOCK": 1024}) + 1024 * M.ALIGN // 2
    )


COLUMN_ARGMAX = """
def k(in_ptr0, out_ptr0, ks0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    x0 = xindex
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], float("-inf"), tl.float32)
    _tmp2_index = tl.full([XBLOCK, R0_BLOCK], 2147483647, tl.int32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        r0_1 = r0_index
        tmp0 = tl.load(in_ptr0 + (ADDRESS), r0_mask & xmask, other=0.0)
        _tmp2_next, _tmp2_index_next = triton_helpers.maximum_with_index(
            _tmp2, _tmp2_index, tmp0, r0_index
        )
        _tmp2 = tl.where(r0_mask & xmask, _tmp2_next, _tmp2)
        _tmp2_index = tl.where(r0_mask & xmask, _tmp2_index_next, _tmp2_index)
    tmp2, tmp3 = triton_helpers.max_with_index(_tmp2, _tmp2_index, 1)
    tl.store(out_ptr0 + (x0), tmp3[:, None], xmask)
"""


@pytest.mark.parametrize("family", ["910B", "950"])
def test_a_column_read_with_a_run_time_row_stride_is_priced_as_strided(family):
    # a dynamic-shape column reduction reads ``x0 + ks0*r0_1``: its stride along the reduced
    # dimension is a size known at run time. Read as contiguous, a 910B2 argmax over columns was
    # estimated at a third of what bishengir required (XBLOCK 1 x R0_BLOCK 1024: 524,288 B), so
    # its first config overflowed; priced as a wide stride it is its static counterpart's figure
    ptrs = {"in_ptr0": "fp32", "out_ptr0": "i64"}
    dynamic, static, contiguous = (
        M.profile(textwrap.dedent(COLUMN_ARGMAX.replace("ADDRESS", a)), ptrs)
        for a in ("x0 + ks0*r0_1", "x0 + 300*r0_1", "r0_1 + ks0*x0")
    )
    cfg = {"XBLOCK": 1, "R0_BLOCK": 1024}
    assert dynamic["padded"] == static["padded"] == {"X,R0": M.ALIGN}
    assert "padded" not in contiguous
    # the middle dimension of a 3-D tensor: the kept dimensions are split with ``%`` / ``//``
    # (a gather along X), the reduced one is still a strided read
    middle = M.profile(
        textwrap.dedent(
            COLUMN_ARGMAX.replace("x0 = xindex", "x0 = xindex % ks0\n    x1 = xindex // ks0")
            .replace("ks0, xnumel", "ks0, ks1, xnumel")
            .replace("ADDRESS", "x0 + ks0*r0_1 + ks0*ks1*x1")
        ),
        ptrs,
    )
    assert middle["padded"] == {"X,R0": M.ALIGN}
    # a dimension gathered along its own axis is priced as a gather, not as a strided read
    gathered = M.profile(
        textwrap.dedent(COLUMN_ARGMAX.replace("ADDRESS", "x0 + ks0*r0_1 + (r0_1 % 7)")), ptrs
    )
    assert "padded" not in gathered
    assert M.estimate(dynamic, cfg, soc_family=family) == M.estimate(static, cfg, soc_family=family)
    assert M.estimate(dynamic, cfg, soc_family=family) > M.estimate(
        contiguous, cfg, soc_family=family
    )
    if family == "910B":  # the column read's first config must not be taken
        assert not M.fits(dynamic, cfg, False, family, 196_608)


GATHER = """
def k(in_ptr0, out_ptr0, ks0, ks1, ks2, xnumel, XBLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = (xindex % ks0)
    x1 = ((xindex // ks0) % ks1)
    x2 = xindex // ks2
    tmp0 = tl.load(in_ptr0 + (ADDRESS), xmask)
    tl.store(out_ptr0 + (xindex), tmp0, xmask)
"""


def _most_at_once(prof: dict, cls: str) -> int:
    return max(sum(n for k, n in p.items() if k.startswith(cls + "|")) for p in prof["points"])


def test_a_gathers_offsets_are_the_buffers_its_evaluation_holds_at_once():
    # a dynamic pad's offsets: 16 integer operations (a repeated subexpression computed once),
    # evaluated left to right, hold at most a few results at once; 910B's bishengir planned
    # 8,256 B at XBLOCK 512 for such a kernel, which every step as a buffer priced at 171,939
    arithmetic = (
        "ks1*x2 + ks1*(((x0 + x1 + ks1*x1 + ks1*x2) // ks1) % ks0) + ks1*ks2*x2 + ((x0 + x1) % ks1)"
    )
    prof = _profile(GATHER.replace("ADDRESS", arithmetic))
    assert 2 <= _most_at_once(prof, "g") <= 6
    # selected with tl.where / abs (a reflection pad's offsets): held the same way, but
    # bishengir planned 116,800 B at XBLOCK 1024 for such a kernel, 28 float32 blocks, its
    # steps apart while they fit: the bound of a plan counts every step apart
    selected = (
        "tl.where(x1 < ks1, x1 + ks0*x2, tl_math.abs((-1) + x1) + ks0*x2) + tl_math.abs(x0 - 1)"
    )
    prof = _profile(GATHER.replace("ADDRESS", selected))
    assert 2 <= _most_at_once(prof, "g") <= 6
    assert sum(n for k, n in prof["apart"].items() if k.startswith("g|")) >= 9
    cfg = {"XBLOCK": 1024}
    peak, apart = M.estimate(prof, cfg), M.apart(prof, cfg)
    assert peak < apart == M.plan_bound(peak, apart, 196_608)


def test_a_repeated_index_expression_is_computed_once_and_kept():
    # upstream prints min/max of an index as ``(a) * ((a) >= (b)) + (b) * ((b) > (a))``; an
    # average-pool backward repeats such macros over its 27 taps. bishengir computes each
    # distinct expression once and keeps it live to its last use, so the taps share values:
    # priced per occurrence, a 3x3x3 kernel ran 16 elements at a time on the 910B
    clamp = "((0) * ((0) >= ((-1) + x1)) + ((-1) + x1) * (((-1) + x1) > (0)))"
    taps = "\n".join(f"    tmp{i} = tl.load(in_ptr0 + ({i} + 15*{clamp}), xmask)" for i in range(9))
    body = GATHER.replace("    tmp0 = tl.load(in_ptr0 + (ADDRESS), xmask)\n", taps + "\n")
    body = body.replace("tl.store(out_ptr0 + (xindex), tmp0", "tl.store(out_ptr0 + (xindex), tmp8")
    once = _profile(body)
    alone = _profile(GATHER.replace("ADDRESS", f"15*{clamp}"))
    # nine taps of one clamp: its steps once, nine offsets and loads more at most
    assert _most_at_once(once, "g") <= _most_at_once(alone, "g") + 9
    assert sum(n for k, n in once["apart"].items() if k.startswith("g|")) <= (
        sum(n for k, n in alone["apart"].items() if k.startswith("g|")) + 2 * 9
    )


def test_multibuffering_doubles_only_the_loaded_buffers():
    prof = _profile(POINTWISE)
    single = M.class_bytes(prof, {"XBLOCK": 1024}, multibuffer=False)
    double = M.class_bytes(prof, {"XBLOCK": 1024}, multibuffer=True)
    for a, b in zip(single, double):
        assert b["l"] == 2 * a["l"] and b["v"] == a["v"]


def test_inlined_helpers_cost_what_their_body_keeps_live():
    # a jit helper the kernel calls through its imports: its intermediate values are buffers
    body = POINTWISE.replace("tmp1 = tmp0 * tmp0", "tmp1 = libdevice.y0(tmp0)")  # a long series
    plain = _profile(body)
    src = "from npu_lowering.runtime.math import libdevice\n" + textwrap.dedent(body)
    pytest.importorskip("npu_lowering")
    inlined = M.profile(src, {"in_ptr0": "fp32", "out_ptr0": "fp32"}, name="k")
    assert M.estimate(inlined, {"XBLOCK": 1024}) > M.estimate(plain, {"XBLOCK": 1024})
    assert any(k.startswith("f|") for p in inlined["points"] for k in p)


def test_integer_emulation_and_native_math_add_buffers():
    base = _profile(POINTWISE)
    narrow = _profile(POINTWISE, in_ptr0="i8", out_ptr0="i8")
    assert any(k.startswith("e|") or k.startswith("s|") for p in narrow["points"] for k in p)
    assert M.estimate(narrow, {"XBLOCK": 256}) > M.estimate(base, {"XBLOCK": 256}) // 4
    sin = _profile(POINTWISE.replace("tmp1 = tmp0 * tmp0", "tmp1 = tl_math.sin(tmp0)"))
    assert (
        sum(c for p in sin["points"] for k, c in p.items() if k.startswith("f|"))
        >= ub_profile._MATH_TEMPS["sin"]
    )


class _Cfg:
    def __init__(self, kwargs, num_warps=1, num_stages=1):
        self.kwargs, self.num_warps, self.num_stages = dict(kwargs), num_warps, num_stages


def _kernel_file(tmp_path, body=POINTWISE):
    path = tmp_path / "kernel.py"
    path.write_text(textwrap.dedent(body))
    return str(path)


def test_configs_are_shrunk_until_they_fit(tmp_path):
    filename = _kernel_file(tmp_path)
    meta = {"kernel_name": "k", "npu_device_facts": {"ub_bytes": 64 * 1024, "vector_cores": 8}}
    sig = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}}
    prof = M.kernel_profile(filename, "k", sig["signature"])
    out = fit_to_ub(
        [_Cfg({"XBLOCK": 65536}), _Cfg({"XBLOCK": 64})], {"x": 65536}, sig, meta, filename
    )
    assert [c.kwargs["XBLOCK"] for c in out][1] == 64  # a config that fits is left alone
    big = out[0].kwargs["XBLOCK"]
    assert big < 65536 and M.estimate(prof, {"XBLOCK": big}) <= 64 * 1024 < M.estimate(
        prof, {"XBLOCK": 2 * big}
    )
    # a multi-buffered variant is shrunk for two copies of its loads, never the reverse
    mb = fit_to_ub([_Cfg({"XBLOCK": 65536}, num_stages=2)], {"x": 65536}, sig, meta, filename)[0]
    assert mb.kwargs["XBLOCK"] <= big and mb.num_stages == 2
    assert M.estimate(prof, {"XBLOCK": mb.kwargs["XBLOCK"]}, multibuffer=True) <= 64 * 1024
    # no readable source: the configs are the heuristics' own
    cfgs = [_Cfg({"XBLOCK": 65536})]
    assert fit_to_ub(cfgs, {"x": 65536}, sig, meta, str(tmp_path / "gone.py")) == cfgs


def test_shrinking_takes_the_outer_axes_first_and_keeps_indirect_rows(tmp_path):
    body = POINTWISE.replace(
        "def k(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):",
        "def k(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):",
    )
    body = body.replace(
        "tl.arange(0, XBLOCK)[:]", "tl.arange(0, XBLOCK)[:, None] + tl.arange(0, R0_BLOCK)[None, :]"
    )
    filename = _kernel_file(tmp_path, body)
    meta = {"kernel_name": "k", "npu_device_facts": {"ub_bytes": 160 * 1024, "vector_cores": 8}}
    sig = {"signature": {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32"}}
    out = fit_to_ub(
        [_Cfg({"XBLOCK": 8, "R0_BLOCK": 2048})], {"x": 64, "r0_": 2048}, sig, meta, filename
    )[0]
    assert (
        out.kwargs["R0_BLOCK"] == 2048 and out.kwargs["XBLOCK"] < 8
    )  # rows give way before the reduction
    indirect = {
        **meta,
        "npu_indirect_indexing": True,
        "npu_device_facts": {"ub_bytes": 64 * 1024, "vector_cores": 8},
    }
    out = fit_to_ub(
        [_Cfg({"XBLOCK": 8, "R0_BLOCK": 2048})], {"x": 64, "r0_": 2048}, sig, indirect, filename
    )[0]
    assert out.kwargs["XBLOCK"] == 2 and out.kwargs["R0_BLOCK"] < 2048


def test_the_950_family_has_its_own_calibration():
    assert soc_family("Ascend950PR") == soc_family("Ascend910_9599") == "950"
    assert soc_family("Ascend910B2") == soc_family(None) == "910B"
    prof = _profile(POINTWISE)
    assert M.estimate(prof, {"XBLOCK": 1024}, soc_family="950") != M.estimate(
        prof, {"XBLOCK": 1024}
    )


@pytest.mark.parametrize("family", ["910B", "950"])
def test_buffers_by_class_are_priced_as_a_profiled_body_prices_them(family):
    """estimate_buffers (the fusion policy's pricing before codegen) pads each buffer to the
    32-byte block, doubles loads when multi-buffered and applies the family's weights, held-out
    margin and reserve: the same per-buffer costs as estimate on a body."""
    import math

    w, reserve = M.WEIGHTS[family], M.RESERVE[family]
    counts = {"l": {4: 2}, "v": {2: 3}}
    got = M.estimate_buffers(counts, 100, multibuffer=True, soc_family=family)
    # 100 float32 = 400 B -> 416 B padded, two copies; 100 float16 = 200 B -> 224 B
    assert got == math.ceil((w["l"] * 2 * 2 * 416 + w["v"] * 3 * 224) * M.MARGIN[family]) + reserve
    single = M.estimate_buffers(counts, 100, multibuffer=False, soc_family=family)
    assert single == math.ceil((w["l"] * 2 * 416 + w["v"] * 3 * 224) * M.MARGIN[family]) + reserve
    # a profile of one statement with the same buffers is priced the same by estimate
    point = {"l|X:4": 2, "v|X:2": 3}
    assert M.estimate({"points": [point]}, {"XBLOCK": 100}, True, family) == got
    # a buffer smaller than the tile is priced at its own elements (8 float32: one block)
    small = M.estimate_buffers(
        {"l": {4: 2, (4, 8): 1}, "v": {2: 3}}, 100, multibuffer=True, soc_family=family
    )
    assert (
        small
        == math.ceil((w["l"] * 2 * (2 * 416 + 32) + w["v"] * 3 * 224) * M.MARGIN[family]) + reserve
    )


def test_buffers_by_class_reject_bad_input():
    with pytest.raises(ValueError, match="unknown buffer classes"):
        M.estimate_buffers({"z": {4: 1}}, 64)
    with pytest.raises(ValueError, match="tile"):
        M.estimate_buffers({"l": {4: 1}}, 0)


@pytest.mark.parametrize("family", ["910B", "950"])
def test_estimates_carry_a_margin_covering_the_worst_held_out_under_estimate(family):
    """Configs are sized with the estimate times the family's margin, at least the inverse of
    the lowest estimate/bishengir ratio on kernels the weights were not fitted on; a body
    estimated at the held-out ratio's worst is then not below bishengir's figure."""
    assert M.MARGIN[family] >= 1 / M.HELD_OUT[family]
    # the 950's GEMM-template first configs of the tiny transformers models (weights alone:
    # 77,306 B estimated for 82,432 B planned, worst ratio 0.85) come out at or above it
    theirs = 82_432
    raw = M.HELD_OUT[family] * theirs - M.RESERVE[family]  # the weighted bytes of such a body
    n = int(raw / M.WEIGHTS[family]["v"]) // 32 * 32  # one value buffer of that many bytes
    assert M.estimate({"points": [{f"v|#{n}:1": 1}]}, {}, False, family) >= theirs * 0.999


SIN_ROWS_OF_8 = """
def k(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    xnumel = 16
    r0_numel = 8
    R0_BLOCK: tl.constexpr = 8
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    tmp0 = tl.load(in_ptr0 + (r0_index + 8*xindex), r0_mask & xmask, other=0.0)
    tmp1 = tl_math.sin(tmp0)
    tmp2 = tl_math.sin(tmp1)
    tmp3 = tl_math.sin(tmp2)
    tmp4 = tl_math.sin(tmp3)
    tmp5 = tl_math.sin(tmp4)
    tmp6 = tl_math.sin(tmp5)
    tmp7 = tmp6 * tmp0
    tmp10 = tl.where(r0_mask & xmask, tmp7, 0)
    tmp11 = tl.sum(tmp10, 1)[:, None]
    tmp12 = tmp6 + tmp0
    tmp15 = tl.where(r0_mask & xmask, tmp12, 0)
    tmp16 = tl.sum(tmp15, 1)[:, None]
    tl.store(out_ptr0 + (xindex), tmp11 + tmp16, xmask)
"""


@pytest.mark.feature("X07")
def test_an_8x8_tiles_body_wide_math_temporaries_are_widened_on_910b():
    """910B's compiler widens every buffer of an 8x8 tile to 8x8x8 (a 32-byte block an element),
    the math expansions' temporaries that stay live through the body included: six chained sines
    over rows of 8 at XBLOCK=8 were planned at 166,208 B (the full suite's
    npu_kernel_0eb27e676c2adb91, 2026-12-05) and estimated at 80,378 B when those temporaries
    were priced as a 16x8 tile's; at XBLOCK 16 (not an 8x8 tile) nothing changes."""
    prof = _profile(SIN_ROWS_OF_8)
    cfg = {"XBLOCK": 8}
    bound = M.plan_bound(M.estimate(prof, cfg), M.apart(prof, cfg), 196_608)
    assert bound >= 166_208
    wide = [by for by in M.class_bytes(prof, {"XBLOCK": 16})]
    assert all(by["Q"] == 0 and by["F"] > 0 for by in wide)
    # the 950 prices them as any math temporaries (its compiler does not widen them)
    eight = M.class_bytes(prof, {"XBLOCK": 8})
    assert all(by["Q"] > 0 and by["F"] == 0 for by in eight)
    assert M.WEIGHTS["950"]["Q"] >= max(M.WEIGHTS["950"]["F"], M.WEIGHTS["950"]["R"])
    assert M.WEIGHTS["910B"]["Q"] >= max(
        M.WEIGHTS["910B"]["q"], M.WEIGHTS["910B"]["F"], M.WEIGHTS["910B"]["R"]
    )


@pytest.mark.feature("X07")
@pytest.mark.parametrize("family", ["910B", "950"])
def test_the_plan_bound_covers_buffers_apart_and_decides_fit_as_the_peak(family):
    """bishengir gives buffers their own addresses while they fit the UB (a 2D gather kernel's
    plan grew 34-146 KB with YBLOCK 1-8, then fell to 61 KB at YBLOCK 16): the body's buffers
    apart bound such a plan; the bound is at least the peak, never past the UB unless the peak
    is, so a config fits by it exactly when it fits by the peak."""
    prof = _profile(SOFTMAX)
    for x in (1, 4, 16, 64):
        peak, apart = (
            M.estimate(prof, {"XBLOCK": x}, False, family),
            M.apart(prof, {"XBLOCK": x}, False, family),
        )
        assert apart >= peak
        for ub in (peak // 2, peak, (peak + apart) // 2, apart, 2 * apart):
            bound = M.plan_bound(peak, apart, ub)
            assert bound >= peak and (bound <= ub) == (peak <= ub)
            assert bound == (min(apart, ub) if peak <= ub else peak)
    assert sum(prof["apart"].values()) > max(sum(p.values()) for p in prof["points"])


MAX_POOL = """
def k(in_ptr0, out_ptr0, out_ptr1, xnumel, r0_numel, XBLOCK: tl.constexpr):
    r0_numel = 169
    R0_BLOCK: tl.constexpr = 256
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_mask = r0_index < r0_numel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_index + 169*x0), r0_mask & xmask, other=0.0)
    tmp3 = tl.where(r0_mask & xmask, tmp0, float("-inf"))
    tmp7 = tl.broadcast_to(r0_index, tmp3.shape)
    tmp6_val, tmp6_idx = triton_helpers.max_with_index(tmp3, tmp7, 1)
    tmp6 = tmp6_idx[:, None]
    tmp13 = (tmp6 + 13*x0).to(tl.int64)
    tl.store(out_ptr1 + (x0), tmp13, xmask)
"""


def test_helpers_of_several_operands_reduce_along_their_axis_argument():
    # max_with_index(value, index, 1) reduces its third argument's axis: the index it returns
    # is one per row, so no tile has XBLOCK twice (read as unreduced, ``[:, None]`` made an
    # XBLOCK x XBLOCK x R0_BLOCK tile and the estimate grew with the square of the block)
    prof = _profile(MAX_POOL, in_ptr0="fp32", out_ptr0="fp32", out_ptr1="i64")
    keys = {k for point in prof["points"] for k in point}
    assert not any(k.split("|")[1].split(":")[0].count("X") > 1 for k in keys), keys
    e = [M.estimate(prof, {"XBLOCK": x}) for x in (4, 8, 16)]
    assert abs((e[2] - e[1]) - 2 * (e[1] - e[0])) <= 2  # linear in the block


# The profile's two halves (issue 35): a front end's statement list (today the reader of the
# generated Triton), and the liveness core (ub_liveness) that turns it into the profile.

LOOPED = """
def k(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr, R0_BLOCK: tl.constexpr):
    xindex = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_base = tl.arange(0, R0_BLOCK)[None, :]
    _tmp2 = tl.full([XBLOCK, R0_BLOCK], 0, tl.float32)
    for r0_offset in tl.range(0, r0_numel, R0_BLOCK):
        r0_index = r0_offset + r0_base
        r0_mask = r0_index < r0_numel
        tmp0 = tl.load(in_ptr0 + (r0_index + 2*xindex), r0_mask & xmask, other=0.0)
        tmp1 = tl.broadcast_to(tl_math.sin(tmp0.to(tl.int8).to(tl.float32)), [XBLOCK, R0_BLOCK])
        _tmp2 = tl.where(r0_mask & xmask, _tmp2 + tmp1, _tmp2)
    tmp2 = tl.sum(_tmp2, 1)[:, None]
    tl.store(out_ptr0 + (xindex), tmp2, xmask)
"""
PTRS = {"in_ptr0": "fp32", "out_ptr0": "fp32"}


def test_the_profile_is_the_liveness_of_the_front_ends_statement_list():
    for body in (POINTWISE, SOFTMAX, LOOPED):
        rec = ub_profile.statements(textwrap.dedent(body), PTRS)
        assert rec["stmts"] and all(len(s) == 4 for s in rec["stmts"])
        assert ub_liveness.profile_of(rec) == ub_profile.profile(textwrap.dedent(body), PTRS)
    looped = ub_profile.statements(textwrap.dedent(LOOPED), PTRS)
    assert looped["loops"] and any(t.startswith("f|") for s in looped["stmts"] for t in s[2])


def test_a_statement_list_survives_being_written_as_a_literal():
    # plain data: a front end may hand it over in a kernel's metadata
    rec = ub_profile.statements(textwrap.dedent(SOFTMAX), PTRS)
    again = ast.literal_eval(repr(rec))
    assert ub_liveness.profile_of(again) == ub_liveness.profile_of(rec)


def test_a_values_widest_definition_is_the_one_kept_live():
    stmts = [
        ["a", [], [], "v|X:4"],
        ["a", ["a"], [], "v|X,R0:2"],
        ["b", ["a"], [], "v|X,R0:4"],
        [None, ["b"], [], None],
    ]
    prof = ub_liveness.profile_of({"stmts": stmts, "loops": [], "blocks": {}})
    assert prof["points"] == [{"v|X,R0:2": 1, "v|X,R0:4": 1}]
    assert prof["apart"] == {"v|X,R0:2": 1, "v|X,R0:4": 1} and prof["ops"] == 3


def test_a_value_written_and_read_within_a_loop_iteration_does_not_live_round_it():
    # a sub-block loop's body (most pointwise kernels): each value dies at its last use in the
    # iteration; only the accumulator (read before the loop writes it) lives through the loop.
    # Kept to the loop's end, every value of the body was live at once.
    stmts = [
        ["acc", [], [], "v|X:4"],
        ["i", [], [], None],
        ["a", ["i"], [], "v|X:4"],
        ["b", ["a"], [], "v|X:4"],
        ["c", ["b"], [], "v|X:4"],
        ["d", ["c"], [], "v|X:4"],
        ["acc", ["acc", "d"], [], "v|X:4"],
        [None, ["acc"], [], None],
    ]
    prof = ub_liveness.profile_of({"stmts": stmts, "loops": [[1, 6]], "blocks": {}})
    assert max(sum(p.values()) for p in prof["points"]) == 3  # acc, a value and the next
    # a value defined before the loop and read inside it lives through the whole loop
    before = [["k", [], [], "v|X:4"]] + [
        [n, u + (["k"] if n == "b" else []), t, v] for n, u, t, v in stmts
    ]
    prof = ub_liveness.profile_of({"stmts": before, "loops": [[2, 7]], "blocks": {}})
    assert all(p.get("v|X:4", 0) >= 2 for p in prof["points"][2:6])
