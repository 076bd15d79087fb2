"""A kernel's UB profile comes with it: codegen makes it from the values it emitted (its
``ub_record``, through ``ub_codegen``) and writes it into the kernel's inductor_meta, where the
heuristics size the kernel's blocks with it; the source is read back only for kernels without
one (and by the cross-check)."""

from __future__ import annotations

import ast
import json
import re

import pytest
import torch
from npu_inductor_core import ascend_rules, ub_model, ub_profile
from torch._inductor import config as inductor_config

from npu_lowering import config


def _decorator_meta(source: str) -> tuple[dict, dict]:
    """The kernel's inductor_meta and its signature, as the generated module writes them."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and any(k.arg == "inductor_meta" for k in node.keywords):
            meta = next(k.value for k in node.keywords if k.arg == "inductor_meta")
            signature = re.search(r"'signature': (\{[^}]*\})", source).group(1)
            return ast.literal_eval(meta), ast.literal_eval(signature)
    raise AssertionError("no heuristics decorator in the kernel")


@pytest.fixture
def kernels(tmp_path, npu):
    """The sources of the kernels a softmax over rows and a masked sum compile to (inference,
    as users run it)."""
    torch._dynamo.reset()

    def fn(x, y):
        return torch.softmax(x * 2, -1), torch.where(y > 0, y, 0).sum(0)

    x, y = torch.randn(6, 40), torch.randn(5, 9)
    with (
        config.patch(save_kernels=str(tmp_path)),
        inductor_config.patch(force_disable_caches=True),
        torch.no_grad(),
    ):
        out = torch.compile(fn)(x.to(npu), y.to(npu))
    for got, want in zip(out, fn(x, y)):
        torch.testing.assert_close(got.cpu(), want)
    torch._dynamo.reset()
    sources = [p.read_text() for p in sorted(tmp_path.glob("npu_kernel_*.py"))]
    assert len(sources) == 2
    return sources


@pytest.mark.feature("X07")
def test_each_kernel_carries_the_profile_codegen_made(kernels):
    for source in kernels:
        meta, signature = _decorator_meta(source)
        name = re.search(r"def (npu_kernel_\w+)\(", source).group(1)
        # the cross-check: the source reader finds the same profile
        assert meta[ub_model.PROFILE_KEY] == ub_profile.profile(
            source, ub_profile.pointer_dtypes(signature), name=name
        )


@pytest.mark.feature("X07")
def test_the_heuristics_size_blocks_with_the_kernels_own_profile(kernels):
    meta, signature = _decorator_meta(kernels[0])
    triton_meta = {"signature": signature}
    own = meta[ub_model.PROFILE_KEY]
    # no file to read back: the profile in the kernel's meta is what the fit uses
    assert ub_model.profile_for(meta, None, signature) == own
    wide = {"XBLOCK": 1 << 16, "R0_BLOCK": 64}
    assert not ascend_rules.fits_ub_estimate(wide, False, triton_meta, meta, None)
    # without it, and with no source either, there is nothing to say against a config
    bare = {k: v for k, v in meta.items() if k != ub_model.PROFILE_KEY}
    assert ub_model.profile_for(bare, None, signature) is None
    assert ascend_rules.fits_ub_estimate(wide, False, triton_meta, bare, None)
    # and a larger profile planted in the meta is the one that decides
    small = {"XBLOCK": 1, "R0_BLOCK": 64}
    assert ascend_rules.fits_ub_estimate(small, False, triton_meta, meta, None)
    planted = {**own, "points": [{"v|X,R0:4": 4096}]}  # 1 MiB at these blocks
    assert not ascend_rules.fits_ub_estimate(
        small, False, triton_meta, {**meta, ub_model.PROFILE_KEY: planted}, None
    )


@pytest.mark.feature("X07")
@pytest.mark.skipif(
    not hasattr(torch._inductor.scheduler, "_is_gpu_triton_backend"),
    reason="torch 2.11's MixOrderReduction.can_fuse admits only cuda/xpu, checked inline (no hook)",
)
def test_a_kernel_codegen_cannot_record_is_read_from_its_source(tmp_path, npu):
    """A mix-order reduction's split loop is written as text (no op traced): its kernel carries
    no profile and the heuristics read its source."""
    from importlib import metadata

    components = {ep.name: ep for ep in metadata.entry_points(group="npu_inductor.components")}
    if "npu-autotune" not in components:
        pytest.skip("mix-order reductions on npu need npu-autotune (not installed)")
    components["npu-autotune"].load()()
    torch._dynamo.reset()
    x = torch.randn(512, 32)
    with (
        config.patch(save_kernels=str(tmp_path)),
        inductor_config.patch(
            {
                "force_disable_caches": True,
                "triton.mix_order_reduction": True,
                "triton.mix_order_reduction_non_strict_mode": True,
            }
        ),
        torch.no_grad(),
    ):
        out = torch.compile(lambda x: (x.sum(0), x.sum(1)))(x.to(npu))
    torch._dynamo.reset()
    for got, want in zip(out, (x.sum(0), x.sum(1))):
        torch.testing.assert_close(got.cpu(), want, rtol=1e-4, atol=1e-4)
    (path,) = [p for p in tmp_path.glob("npu_kernel_*.py") if "RSPLIT_SIZE" in p.read_text()]
    source = path.read_text()
    meta, signature = _decorator_meta(source)
    assert ub_model.PROFILE_KEY not in meta
    assert json.loads(path.with_suffix(".ub.json").read_text()) == {"failed": "mix-order reduction"}
    name = re.search(r"def (npu_kernel_\w+)\(", source).group(1)
    assert ub_model.profile_for({**meta, "kernel_name": name}, str(path), signature) == (
        ub_profile.profile(source, ub_profile.pointer_dtypes(signature), name=name)
    )
