"""The UB profile's two halves (issue 35): a front end's statement list (today the reader of
the generated Triton), and the liveness core that turns it into the profile ub_model prices."""

from __future__ import annotations

import ast
import textwrap

from npu_inductor_core import ub_liveness, ub_profile

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
