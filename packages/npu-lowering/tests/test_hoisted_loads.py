"""Loads that name no loop axis are read once per program, before the sub-block loops
(npu_lowering/hoist.py, issue 38): add + RMSNorm's weight is the same 4096-wide tile for every
block of rows, and inside the loop it was read from GM again for each one (1.25x the minimum
GM bytes). On a device with 4 vector cores 16 rows are several blocks per program, so the
hoisted value is used by more than one iteration, and the results still match eager."""

import dataclasses
import re

import pytest
import torch
from torch._inductor import config as inductor_config
from torch._inductor.utils import fresh_cache, run_and_get_code

from npu_inductor_core import tiles as tiling

pytestmark = pytest.mark.feature("X11")
HIDDEN = 4096
CORES = 4


def add_rms_norm(x, residual, w):
    h = x + residual
    hf = h.float()
    return (hf * torch.rsqrt(hf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype), h


@pytest.fixture
def small_device(monkeypatch):
    dev = dataclasses.replace(tiling.device(0), vector_cores=CORES)
    monkeypatch.setattr(tiling, "device", lambda index=0: dev)
    with inductor_config.patch(force_disable_caches=True), fresh_cache():
        yield dev


def _kernel_bodies(code: str) -> list[str]:
    return re.findall(r"async_compile\.triton\('\w+', '''(.*?)'''", code, re.S)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_rms_norm_weight_is_loaded_once_before_the_row_loop(small_device, dtype):
    g = torch.Generator().manual_seed(0)
    x, r = (torch.randn(16, HIDDEN, generator=g, dtype=dtype) for _ in range(2))
    w = torch.randn(HIDDEN, generator=g, dtype=dtype)
    torch._dynamo.reset()
    (y, h), codes = run_and_get_code(torch.compile(add_rms_norm), x.npu(), r.npu(), w.npu())
    [kernel] = _kernel_bodies("\n".join(codes))
    lines = kernel.splitlines()
    loop = next(i for i, line in enumerate(lines) if line.strip().startswith("for xsub in"))
    # the weight (in_ptr2, indexed by the row's r0 index alone): one load, before the loop,
    # with the r index it needs; the rows' loads stay in it
    weight = [i for i, line in enumerate(lines) if "tl.load(in_ptr2 + (r0_1)" in line]
    assert len(weight) == 1 and weight[0] < loop, kernel
    assert any(line.strip().startswith("r0_1 = ") for line in lines[:loop]), kernel
    rows = [i for i, line in enumerate(lines) if "tl.load(in_ptr0 + " in line]
    assert rows and all(i > loop for i in rows), kernel
    ref_y, ref_h = add_rms_norm(x, r, w)
    torch.testing.assert_close(h.cpu(), ref_h)
    torch.testing.assert_close(y.cpu(), ref_y, atol=5e-2, rtol=2e-2)


def test_what_stays_in_the_loop():
    """The rule on its own: an index or mask naming the loop axis, a computed (ops.masked)
    mask, an indirect index, or a buffer the kernel writes keep the load in the loop."""
    from types import SimpleNamespace

    import sympy
    from torch._inductor.codegen.triton import IndexingOptions
    from torch.utils._ordered_set import OrderedSet
    from torch.utils._sympy.symbol import SymT

    from npu_lowering import hoist

    x0 = sympy.Symbol("x0", integer=True)
    r0 = sympy.Symbol("r0_1", integer=True)
    tmp = sympy.Symbol("tmp3", integer=True)
    x = SimpleNamespace(symt=SymT.XBLOCK, mask_name=lambda: "xmask")

    def opts(index, *masks):
        return IndexingOptions(str(index), OrderedSet(masks), None, True, index, None)

    assert hoist.row_invariant(opts(r0), [x], written=False)
    assert hoist.row_invariant(opts(r0, "r0_mask"), [x], written=False)
    assert not hoist.row_invariant(opts(r0), [x], written=True)
    assert not hoist.row_invariant(opts(r0 + 4096 * x0), [x], written=False)
    assert not hoist.row_invariant(opts(r0, "xmask"), [x], written=False)
    assert not hoist.row_invariant(opts(r0, "tmp5"), [x], written=False)
    assert not hoist.row_invariant(opts(r0 + tmp), [x], written=False)
