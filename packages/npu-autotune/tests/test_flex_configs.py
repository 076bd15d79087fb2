"""A37 max_autotune_flex_search_space on npu: the flex-attention tile lists Inductor's
choices object gives device "npu" (the lists flex attention's lowering asks for) are
Cube-aware and the flag changes them. torch 2.13's ``flex_attention`` itself refuses npu
tensors (``_validate_device``: CUDA, CPU, HPU, MPS only), so no flex kernel is compiled here."""

import pytest
import torch
from torch._inductor import config
from torch._inductor.virtualized import V

import sympy
from npu_inductor_core.torch_versions import at_least

from npu_autotune import flex_configs
from npu_autotune.gemm_templates import _device


def _lists(head_dim=64, dtype=torch.float16):
    c = V.choices
    # torch 2.15 added the sequence length to the forward configs' arguments
    fwd_args = (head_dim, sympy.Integer(128), dtype) if at_least("2.15") else (head_dim, dtype)
    return (
        c.get_flex_attention_fwd_configs(*fwd_args, "npu"),
        c.get_flex_attention_bwd_configs(head_dim, dtype, "npu"),
        c.get_flex_decode_configs(head_dim, dtype, "npu"),
    )


@pytest.mark.feature("A37")
@pytest.mark.parametrize("head_dim,dtype", [(64, torch.float16), (128, torch.float32)])
def test_flex_search_space_changes_the_npu_candidates_and_each_fits_the_cube(head_dim, dtype):
    dev, ds = _device(), dtype.itemsize
    got = {}
    for space in ("DEFAULT", "EXHAUSTIVE"):
        with config.patch(max_autotune=True, max_autotune_flex_search_space=space):
            got[space] = _lists(head_dim, dtype)
    with config.patch(max_autotune=False):
        got["off"] = _lists(head_dim, dtype)
    for i in range(3):  # forward, backward, decode
        assert len(got["off"][i]) == 1 < len(got["DEFAULT"][i]) < len(got["EXHAUSTIVE"][i])
        assert set(map(repr, got["DEFAULT"][i])) != set(map(repr, got["EXHAUSTIVE"][i]))
    # every candidate of every list is npu's: one warp, fractal multiples, within the Cube and UB
    for space in got.values():
        fwd, bwd, dec = space
        assert all(c.num_warps == 1 for c in (*fwd, *bwd, *dec))
        assert all(
            flex_configs.fwd_fits(c.block_m, c.block_n, head_dim, c.num_stages, ds, dev)
            for c in fwd
        )
        assert all(
            flex_configs.bwd_fits(
                c.block_m1, c.block_n1, c.block_m2, c.block_n2, head_dim, c.num_stages, ds, dev
            )
            for c in bwd
        )
        assert all(
            flex_configs.decode_fits(c.block_n, head_dim, c.num_stages, ds, dev) for c in dec
        )
    # upstream's GPU lists would have 4-8 warps and tiles the Cube cannot hold: npu's are not those
    from npu_inductor_core.torch_versions import template_heuristics

    BaseConfigHeuristic = template_heuristics("triton").BaseConfigHeuristic  # moved in torch 2.14

    with config.patch(max_autotune=True, max_autotune_flex_search_space="EXHAUSTIVE"):
        upstream = BaseConfigHeuristic().get_flex_attn_fwd_configs(
            *((head_dim, sympy.Integer(128), dtype) if at_least("2.15") else (head_dim, dtype))
        )
    assert set(map(repr, upstream)) != set(map(repr, got["EXHAUSTIVE"][0]))


@pytest.mark.feature("A37")
def test_a_larger_head_dim_or_a_smaller_ub_prunes_tiles():
    from npu_inductor_core.device import Device

    big, small = Device(256 * 1024, 64, l0c_bytes=256 * 1024), Device(64 * 1024, 48)
    tiles = [(m, n) for m in flex_configs.SIZES for n in flex_configs.SIZES]
    n_big = sum(flex_configs.fwd_fits(m, n, 64, 1, 2, big) for m, n in tiles)
    n_small = sum(flex_configs.fwd_fits(m, n, 64, 1, 2, small) for m, n in tiles)
    n_wide = sum(flex_configs.fwd_fits(m, n, 256, 1, 2, big) for m, n in tiles)
    assert n_big > n_small > 0 and n_big > n_wide > 0
    assert not flex_configs.fwd_fits(24, 32, 64, 1, 2, big)  # not a fractal multiple
