"""The UB model's codegen front end against its source reader (issue 35): kernels compiled on
npu keep codegen's record of their values (``ub_record``, saved beside each kernel file with
``config.save_kernels``); ``ub_codegen`` turns it into the statement list that ``ub_profile``
reads back from the source, and the two profiles must be equal, or differ exactly as listed
(the reasons are with each case)."""

import ast
import json
import re
from collections import Counter

import pytest
import torch
from torch._inductor import config as inductor_config

from npu_inductor_core import ub_codegen, ub_liveness, ub_profile
from npu_lowering import config


def _long(n):
    return torch.randint(0, 100, (n,), dtype=torch.int64, device="npu")


def _randn(*shape):
    return torch.randn(*shape, device="npu")


# name -> (function, argument makers, the statements only the source reader has and those only
# codegen's record has, each {(value key, temporaries): count}; empty where the profiles agree)
CASES = {
    "add": (lambda a, b: a + b, lambda: (_randn(16, 32), _randn(16, 32)), {}),
    "broadcast": (lambda a, b: a * b, lambda: (_randn(16, 32), _randn(32)), {}),
    "softmax": (lambda a: torch.softmax(a, -1), lambda: (_randn(8, 64),), {}),
    "looped_sum": (lambda a: a.sum(-1), lambda: (_randn(4, 16384),), {}),
    "transposing_copy": (lambda a: a.t().contiguous() + 1, lambda: (_randn(32, 16),), {}),
    "where": (
        lambda a, b: torch.where(a > 0, a, b),
        lambda: (_randn(16, 32), _randn(16, 32)),
        {},
    ),
    # a constant printed as a full tile and cast: two values, as the source reads them
    "var_mean": (lambda a: torch.var_mean(a, -1), lambda: (_randn(8, 64),), {}),
    # the indirect index's bounds check (five masks) and its int64 offsets
    "gather": (
        lambda a, i: a.index_select(0, i),
        lambda: (_randn(32, 8), torch.tensor([3, 1, 7, 0], device="npu")),
        {},
    ),
    # an index_expr and a gather address sharing a printed prefix, ``(-1) + x0``
    "constant_pad": (lambda a: torch.nn.functional.pad(a, (1, 1)), lambda: (_randn(8, 30),), {}),
    # float16 loads upcast (``tl.load(...).to(tl.float32)``: the loaded tile, then its cast)
    "float16": (
        lambda a, b: (a + b) * 2,
        lambda: (_randn(16, 32).half(), _randn(16, 32).half()),
        {},
    ),
    "sin_cos": (lambda a: a.sin() + a.cos(), lambda: (_randn(64),), {}),
    # Triton's own jitted math (``tl.sigmoid``), inlined as the source reader inlines it
    "sigmoid": (lambda a: a.sigmoid() * 3 + a.cos(), lambda: (_randn(64),), {}),
    # a NaN-aware argmax window: ``isnan(a) > isnan(b)`` printed over int8 casts of the bools
    "max_pool_indices": (
        lambda a: torch.nn.functional.max_pool2d(a, 3, 2, return_indices=True),
        lambda: (_randn(1, 2, 7, 7),),
        {},
    ),
    # a value read as an index and broadcast by upstream to the block (``tl.load(in_ptr1 +
    # (tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])), ...)``): the broadcast offsets a tile
    "masked_scatter": (
        lambda x, m, s: x.masked_scatter(m, s),
        lambda: (_randn(25), _randn(25) > 0, _randn(25)),
        {},
    ),
    # a load's mask npu reduces over the axes its index lacks (``tl.max((tmp6 &
    # xmask).to(tl.int8), 0, keep_dims=True) != 0``): combined, cast, reduced, compared
    "reduced_load_mask": (
        lambda c, p, e: torch.nn.functional.layer_norm(
            torch.cat([c.expand(p.shape[0], 1, -1), p], 1) + e, (32,)
        ),
        lambda: (_randn(1, 1, 32), _randn(3, 4, 32), _randn(1, 5, 32)),
        {},
    ),
    # a scan whose combine is a generated helper (its own CSE, names like the kernel's)
    "cummax": (lambda a: torch.cummax(a, 1), lambda: (_randn(4, 25),), {}),
    # a helper with two results, written as a line of its own (``tmp1, tmp2 = ...frexp``)
    "frexp": (lambda a: torch.frexp(a), lambda: (_randn(20),), {}),
    # libdevice.erf: a helper whose inlined body keeps buffers (found as the source reader
    # finds it, through the kernel's imports)
    "gelu": (lambda a: torch.nn.functional.gelu(a), lambda: (_randn(64),), {}),
    # 8-bit integer arithmetic, emulated through float16/float32 with a fixed scratch
    "int8_add": (
        lambda a, b: a + b,
        lambda: (torch.randint(0, 9, (64,), dtype=torch.int8, device="npu"),) * 2,
        {},
    ),
    "layer_norm": (
        lambda a, w: torch.nn.functional.layer_norm(a, (64,), w),
        lambda: (_randn(8, 64), _randn(64)),
        {},
    ),
    "column_sum": (lambda a: a.sum(0), lambda: (_randn(64, 16),), {}),
    # upstream's sign test for a remainder, ``(libdevice.signbit(t) != 0) if (t).dtype is
    # tl.float32 ... else t < 0``, chooses its branch by the dtype when Triton compiles it; the
    # source reader prices both branches and codegen's front end copies that
    "int64_index_math": (lambda a: a * 3 // 2 + a % 5, lambda: (_long(64),), {}),
    "cumsum": (lambda a: a.cumsum(-1), lambda: (_randn(8, 64),), {}),
    # ``tmp2_val, tmp2_idx = max_with_index(tmp1, tmp3, 1)``: names upstream writes as text,
    # its masked operand a CSE hit of the max's (the source reader reduces it by the operand's
    # shape and bytes, and reads ``tl.broadcast_to(rindex, tmp1.shape)`` as rindex's shape)
    "argmax": (lambda a: a.argmax(-1), lambda: (_randn(8, 64),), {}),
    "max_and_argmax": (lambda a: (a.amax(-1), a.argmax(-1)), lambda: (_randn(8, 64),), {}),
    # a looped welford: its running ``tmp2_mean`` / ``_m2`` / ``_weight`` and the final
    # ``welford(...)``, names upstream writes as text, rebuilt from the accumulator codegen made;
    # the source reader reads ``welford(...)`` as unreduced (its [:, None] then makes X x 1 x R0
    # tiles, an over-count ub_profile keeps on purpose), and codegen's front end copies it
    "looped_var_mean": (lambda a: torch.var_mean(a, -1), lambda: (_randn(4, 16384),), {}),
    # a reduction over two axes (r0_, r1_) reduces a flat view, ``tl.reshape(t, [XBLOCK,
    # RBLOCK])``, whose skewed shape the source reader propagates: codegen's front end copies it
    "two_axis_var_mean": (
        lambda a: torch.var_mean(a, [1, 3]),
        lambda: (_randn(1, 2, 4, 8),),
        {},
    ),
    # ``libdevice.isnan(x).to(tl.int1)``: the helper's value, then the cast; and a second
    # reduction of one operand, whose broadcast is codegen's first (a CSE hit)
    "isnan_any": (
        lambda a: (a.amax(-1), a.amin(-1), torch.isnan(a).any(-1)),
        lambda: (_randn(8, 40),),
        {},
    ),
    # isinf's helper buffers on its value's tile; sign printed ``sub.to(x.dtype)``, read by the
    # source reader as its int8 operand (a cast to a dtype it cannot read)
    "isinf_sign": (
        lambda a: (torch.isinf(a * float("inf")), torch.sign(a)),
        lambda: (_randn(64),),
        {},
    ),
    # a looped welford over two axes: each running value's flat view, then the unreduced
    # ``welford(...)`` of the three
    "two_axis_looped_var_mean": (
        lambda a: torch.var_mean(a, [1, 3]),
        lambda: (_randn(1, 16, 2, 1024),),
        {},
    ),
    # a looped argmax: its ``_tmpN_index`` accumulator and ``maximum_with_index`` combination
    # (names upstream writes as text, rebuilt from the accumulator codegen made)
    "looped_argmax": (lambda a: a.argmax(-1), lambda: (_randn(4, 16384),), {}),
    "looped_reductions": (
        lambda a: (a.sum(-1), a.amax(-1), a.argmax(-1), torch.var_mean(a, -1)),
        lambda: (_randn(4, 16384),),
        {},
    ),
    # special functions upstream prints guarded against infinities, ``tl.where(tl.abs(x) ==
    # float('inf'), x - x, libdevice.j1(x))`` (the form from upstream's table of printers)
    "bessel": (
        lambda a: (torch.special.bessel_j1(a), torch.special.i1(a)),
        lambda: (_randn(64),),
        {},
    ),
    # triton_helpers helpers (``neg_signed_zero``, ``maximum_signed_zero``) priced by their
    # bodies, as the source reader finds them
    "signed_zero": (
        lambda a, b: (-a, torch.maximum(a, b), torch.minimum(a, b)),
        lambda: (_randn(64), _randn(64)),
        {},
    ),
    # npu's scatter fold of an atomic add under two axes' masks (scatter_mask): the value
    # selected outside ops, the address ``tl.where(r0_mask, tl.broadcast_to(...), ...)``
    "scatter_fold": (
        lambda x, i: torch.zeros(10, 24, device=x.device).index_put_(
            (i,), x - x.amax(-1, keepdim=True), accumulate=True
        ),
        lambda: (_randn(12, 24), torch.randint(-10, 10, (12,), device="npu")),
        {},
    ),
    # a row quantized to int8 and uint8: npu casts a tile of two dimensions on a flat view,
    # upstream casts a float to uint8 through int16
    "quant_rows": (
        lambda a: (
            (q := (a / a.abs().amax(-1, keepdim=True) * 127).round()).to(torch.int8),
            q.clamp(0, 255).to(torch.uint8),
        ),
        lambda: (_randn(8, 64),),
        {},
    ),
    # a gather (``y0 = yindex % 8``) whose innermost dimension is strided: staged as well
    "strided_gather": (
        lambda a: a.permute(0, 2, 1).reshape(16, 16) + 0,
        lambda: (_randn(2, 16, 8),),
        {},
    ),
    # -0.0 printed as its bits, bitcast (a full tile, then the cast)
    "negative_zero": (lambda a: torch.full_like(a, -0.0), lambda: (_randn(64),), {}),
    # an int64 iota (value_expr): upstream's index_expr inside it, made outside ops, then cast
    "iota": (lambda a: torch.arange(64, device=a.device) + a, lambda: (_long(64),), {}),
    # a cat: ``ops.masked``'s other value, ``tl.full(tmp13.shape, 0.0, tmp13.dtype)``
    "cat": (lambda a: torch.cat([a.t(), a.t() * 2]) + 1, lambda: (_randn(6, 8),), {}),
    # a gather whose printed address nests ``%`` and ``//`` (``16*(((x0 + 2*(x1)) % 6)) +
    # (((x1) // 3) % 16)``): each printed operation a gather offset of its own, as the source
    # reader prices them (the record walks the sympy index as the printer prints it)
    "nested_gather": (
        lambda a: torch.cat([a.t().reshape(-1, 2), a.t().reshape(-1, 2) * 2]) + 1,
        lambda: (_randn(6, 16),),
        {},
    ),
    # a range tree's index variable that nests operations, ``x1 = ((xindex // 16) % 3)``: the
    # inner ``xindex // 16`` a value of its own
    "index_variable": (
        lambda a, b: a.permute(1, 0, 2) + b,
        lambda: (_randn(10, 3, 16), _randn(3, 10, 16)),
        {},
    ),
    # ``8*x1 + ((x0 % 4))``: the remainder a gather offset of its own, and the address strided
    # by the term printed as a product (8), staged, as the source reader reads the stride
    "repeat": (lambda a: a[:, :4].repeat(1, 2) + 1, lambda: (_randn(32, 8),), {}),
    # an int32 iota: upstream's value_expr prints no second cast where the dtypes agree, its
    # variable the index_expr's own, ``(y0 + 16*x1).to(tl.int32)``
    "iota_int32": (
        lambda a: torch.arange(64, dtype=torch.int32, device=a.device).view(4, 16).t() + a,
        lambda: (torch.randint(0, 9, (16, 4), dtype=torch.int32, device="npu"),),
        {},
    ),
    # a bool load is always cast, ``tl.load(...).to(tl.int1)``: the loaded bits, then the cast
    "bool_load": (
        lambda m, a: a.masked_fill(m[:, None], 0.0),
        lambda: (torch.rand(20, device="npu") > 0.5, _randn(20, 5)),
        {},
    ),
    # one element: a constant index's scalar load broadcast (``tl.broadcast_to(tmp0,
    # [XBLOCK])``) and a constant mask that reads no index
    "one_element": (lambda a: a * 2 + 1, lambda: (torch.tensor(3.0, device="npu"),), {}),
    # ``tmp2 & tmp4`` of masks over two dimensions (logical_and): each operand broadcast first
    "mask_and": (
        lambda a, b: ((a > 0) & (b > 0)).any(-1),
        lambda: (_randn(8, 64), _randn(8, 1)),
        {},
    ),
    # a looped any: its bool accumulator cast to int8 for the final reduction (``tmp3 =
    # _tmp2.to(tl.int8)``), reduced with no cast back
    "looped_any": (lambda a: (a > 0).any(-1), lambda: (_randn(4, 16384),), {}),
    # dynamic sizes, ``ks0*x1 + ((x0 % 4))``: the run-time stride is of no account where a
    # gather's term varies along the dimension (no staging), as the source reader reads it
    "repeat_dynamic": (lambda a: a[:, :4].repeat(1, 2) + 1, lambda: (_randn(32, 8),), {}),
    # an int64 iota past int32's range: npu prints it over its variables widened to int64,
    # ``(2147483644 + y0.to(tl.int64) + 16*x1.to(tl.int64))``, with no cast around it
    "iota_beyond_int32": (
        lambda a: torch.arange(2**31 - 4, 2**31 + 60, device=a.device).view(4, 16).t() + a,
        lambda: (torch.randint(0, 9, (16, 4), device="npu"),),
        {},
    ),
}

# cases compiled with dynamic sizes
DYNAMIC = {"repeat_dynamic"}

# inductor settings a case compiles under
PATCHES = {
    "two_axis_var_mean": {"triton.prefer_nd_tiling": True, "triton.tile_reductions": True},
    "signed_zero": {"strict_signed_zero": True},
    "two_axis_looped_var_mean": {
        "triton.prefer_nd_tiling": True,
        "triton.tile_reductions": True,
    },
}


@pytest.fixture
def saved(tmp_path):
    torch._dynamo.reset()
    with config.patch(save_kernels=str(tmp_path)), inductor_config.patch(force_disable_caches=True):
        yield tmp_path
    torch._dynamo.reset()


def _pointer_dtypes(source: str) -> dict:
    signature = re.search(r"'signature': (\{[^}]*\})", source).group(1)
    return ub_profile.pointer_dtypes(ast.literal_eval(signature))


def _statements(path):
    """Both front ends' statement lists of a saved kernel."""
    source = path.with_name(path.name.replace(".ub.json", ".py")).read_text()
    name = re.search(r"def (npu_kernel_\w+)\(", source).group(1)
    pointers = _pointer_dtypes(source)
    from_source = ub_profile.statements(source, pointers, name)
    from_codegen = ub_codegen.statements(json.loads(path.read_text()), pointers)
    return from_source, from_codegen


def _tiles(record) -> Counter:
    """A statement list's statements that hold buffers, by their value key and temporaries."""
    return Counter((s[3], tuple(sorted(s[2]))) for s in record["stmts"] if s[3] or s[2])


@pytest.mark.parametrize("case", sorted(CASES))
def test_codegen_record_profiles_as_the_source_does(case, saved):
    fn, make, only_in_source, *rest = CASES[case]
    only_in_codegen = rest[0] if rest else {}
    with inductor_config.patch(PATCHES.get(case, {})):
        torch.compile(fn, dynamic=case in DYNAMIC)(*make())
    records = sorted(saved.glob("*.ub.json"))
    # a case with differences pinned compiles one kernel; one that agrees may compile several
    assert len(records) == 1 or (records and not only_in_source and not only_in_codegen), records
    for record in records:
        assert "failed" not in json.loads(record.read_text())
        from_source, from_codegen = _statements(record)
        assert dict(_tiles(from_codegen) - _tiles(from_source)) == only_in_codegen
        assert dict(_tiles(from_source) - _tiles(from_codegen)) == only_in_source
        same = ub_liveness.profile_of(from_source) == ub_liveness.profile_of(from_codegen)
        assert same == (not only_in_source and not only_in_codegen)
