"""Kernels with an indirect load get no one-row x block (triton-ascend 3.2.0's triton-adapter-opt
aborts on such loads at XBLOCK=1: ``!(lBlock.hasSource() && rBlock.hasSource())`` in its pointer
analysis; found by the Ascend check on OPT's and BERT's embeddings + layer norm).

npu-lowering's codegen marks the kernel (inductor_meta ``npu_indirect_indexing``); the
heuristics of npu-lowering and npu-autotune drop XBLOCK=1 configs of marked kernels whose x axis
has more than one row, keeping them where nothing else is left.
"""

from __future__ import annotations

import pytest
import torch
from torch._inductor.runtime.triton_heuristics import Config
from torch._inductor.utils import run_and_get_code

from npu_inductor_core import tiles as tiling


@pytest.fixture(scope="module", autouse=True)
def _npu():
    import npu_inductor

    npu_inductor.enable()


def _cfgs(*xblocks):
    return [Config({"XBLOCK": x}, num_warps=1) for x in xblocks]


def test_both_heuristics_obey_the_core_rule():
    """npu-lowering's heuristics and npu-autotune's tile generator filter through one rule, the
    core package's (its tests check the rule itself)."""
    from npu_inductor_core import ascend_rules

    assert tiling.without_one_row_indirect is ascend_rules.without_one_row_indirect
    assert tiling.INDIRECT_KEY == ascend_rules.INDIRECT_KEY
    marked = {ascend_rules.INDIRECT_KEY: True}
    assert [
        c.kwargs["XBLOCK"]
        for c in tiling.without_one_row_indirect(_cfgs(16, 1, 4), {"x": 16}, marked)
    ] == [16, 4]


def test_embedding_kernels_are_marked_and_get_no_one_row_block():
    emb, ln = torch.nn.Embedding(64, 32).to("npu"), torch.nn.LayerNorm(32).to("npu")

    def fn(ids):
        return ln(emb(ids) * 2)

    ids = torch.randint(0, 64, (2, 7))
    torch._dynamo.reset()
    out, codes = run_and_get_code(torch.compile(fn), ids.to("npu"))
    code = "\n".join(codes)
    assert f"'{tiling.INDIRECT_KEY}': True" in code
    from torch._inductor.codecache import PyCodeCache

    from npu_lowering.runtime.autotuner import NpuCachingAutotuner

    kernels = []
    for mod in reversed(PyCodeCache.modules):  # the module this compile loaded last
        kernels = [
            k
            for k in vars(mod).values()
            if isinstance(k, NpuCachingAutotuner)
            and k.inductor_meta.get(tiling.INDIRECT_KEY)
            and k.inductor_meta.get("kernel_name") in code
        ]
        if kernels:
            break
    assert kernels and all(
        len(k.configs) > 1 and all(c.kwargs.get("XBLOCK") != 1 for c in k.configs) for k in kernels
    ), [[c.kwargs for c in k.configs] for k in kernels]
    with torch.no_grad():
        ref = torch.nn.functional.layer_norm(
            emb.weight.cpu()[ids] * 2, (32,), ln.weight.cpu(), ln.bias.cpu()
        )
    torch.testing.assert_close(out.cpu(), ref, atol=1e-5, rtol=1e-5)


def test_a_gathered_row_only_one_of_which_fits_is_looped_at_two_rows():
    """``table[ids]`` then an RMSNorm at hidden 4096: one float32 row of the gathering kernel
    fits a core's UB, two do not. Kept whole it could only run one row a block, where Ascend's
    front end rejects the gather (its index is wrapped for negative values on a one-element
    tile); so the row is looped and every config takes two rows or more. Hidden 32: rows stay
    whole (persistent). An embedding (no wrap) at 4096 stays whole at one row, as before."""
    from torch._inductor.utils import fresh_cache

    def indexed(ids, table, w):
        return _norm(table[ids], w)

    def embedded(ids, table, w):
        return _norm(torch.nn.functional.embedding(ids, table), w)

    for fn, hidden, persistent in (
        (indexed, 4096, False),
        (indexed, 32, True),
        (embedded, 4096, True),
    ):
        ids = torch.randint(0, 20, (4,), device="npu")
        table = torch.randn(20, hidden, device="npu")
        w = torch.randn(hidden, device="npu")
        torch._dynamo.reset()
        with torch.no_grad(), fresh_cache():
            out, codes = run_and_get_code(torch.compile(fn), ids, table, w)
        code = "\n".join(codes)
        assert ("@triton_heuristics.persistent_reduction" in code) is persistent, (fn, hidden)
        torch.testing.assert_close(out, fn(ids, table, w), atol=1e-5, rtol=1e-5)


def _norm(x, w):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
