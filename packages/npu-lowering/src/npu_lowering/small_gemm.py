"""Small GEMMs as Triton templates in default mode, on npu.

On an NPU a small matmul is host-bound: through ATen it costs torch_npu's op dispatch and
aclnn's two-phase launch (workspace query, then launch: tens of microseconds of host time);
as a Triton GEMM template it is one launch through npu-launcher (a few microseconds), and the
template takes its epilogue (bias, activation, residual add) with it, saving more kernels.
Upstream offers GEMM templates only under max_autotune / max_autotune_gemm, where every
candidate is compiled and timed. In default mode, a static npu mm / addmm / bmm / baddbmm
lowers to upstream's template with one tile (npu-autotune's first candidate, scaled to the
problem by upstream), so nothing is benchmarked, where the Ascend cost model
(``npu_inductor_core.cost_model.gemm_seconds``) estimates that template faster than one aclnn
GEMM: aclnn's two-phase launch against one kernel launch, the whole device's rates against
the tile's programs over the Cube cores. Larger GEMMs stay ATen, whose result is eager's.

Upstream's flags still decide: with max_autotune or max_autotune_gemm on, upstream's own
tuning runs; with TRITON not in max_autotune_gemm_backends, ATen. Ours, in
``npu_lowering.config``: ``small_gemm_templates`` ($NPU_LOWERING_SMALL_GEMM_TEMPLATES, default
True; False = ATen as upstream) and ``small_gemm_max_macs`` (config only, default None: a
cap on the multiply-adds of a GEMM the estimate may give the template). Both enter the FX graph cache key (the config module is
npu's ``device_custom_config``).

One choice, nothing timed: the components' extra GEMM templates (npu-autotune's swap-A/B) are
not offered under the one-tile config (``one_tile()``, asked by ``NpuChoices``). With two
choices upstream would build a MultiTemplateBuffer, time both in Triton's interpreter, and
(``benchmark_epilogue_fusion``, on by default) time the fused epilogue too: a compile that
differs with the machine's load, and a path to upstream's stale-pair fusion bug (the
scheduling's ``_still_scheduled``). Max-autotune offers them all and times them.

Not for M=1 or N=1 (one token, a matrix-vector product): upstream's template indexes the
operands by ``rm % M`` / ``rn % N``, a zero-stride pointer there that triton-ascend refuses;
those stay ATen (K=1 is Inductor's pointwise decomposition, before any template).
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import math

import torch
from npu_inductor_core import env_config

from . import config as npu_config

_ONE_TILE = contextvars.ContextVar("npu_small_gemm_one_tile", default=False)

DTYPES = (torch.float16, torch.bfloat16, torch.float32)
# device types the policy applies to; the cuda benchmark (bench/launch_overhead.py) adds "cuda"
DEVICES = {"npu"}


def enabled() -> bool:
    return env_config.check(
        npu_config,
        "small_gemm_templates",
        env_config.is_bool,
        "True or False",
        "NPU_LOWERING_SMALL_GEMM_TEMPLATES",
    )


def max_macs() -> int | None:
    return env_config.check(
        npu_config,
        "small_gemm_max_macs",
        lambda v: v is None or env_config.is_int(v),
        "None or an int >= 0",
    )


def _static_sizes(node) -> list[int] | None:
    try:
        return [int(s) for s in node.get_size()]
    except (TypeError, AttributeError):  # symbolic (dynamic) sizes, or not a tensor
        return None


def _tiles_for(device_type: str) -> bool:
    from torch._inductor.kernel.mm import mm_template
    from npu_inductor_core.torch_versions import template_heuristics

    get_registered_heuristic_class = template_heuristics(
        "registry"
    ).get_registered_heuristic_class  # moved in 2.14

    return get_registered_heuristic_class(mm_template.uid, device_type, "mm") is not None


@functools.cache
def _first_tile(device_type: str) -> tuple[int, int, int]:
    """(BLOCK_M, BLOCK_N, BLOCK_K) of the first mm tile the device's template heuristic offers:
    the one the one-tile config lowers with, before upstream scales it to the problem."""
    from torch._inductor.kernel.mm import mm_template
    from npu_inductor_core.torch_versions import template_heuristics

    cls = template_heuristics("registry").get_registered_heuristic_class(
        mm_template.uid, device_type, "mm"
    )
    first = cls().mm_configs[0]
    return int(first.block_m), int(first.block_n), int(first.block_k)


def _scaled(block: int, size: int) -> int:
    # upstream scales a tile edge down to the problem's size (a power of two, at least 16)
    return max(16, min(block, 1 << max(0, size - 1).bit_length()))


def template_is_faster(device, dtype, batch: int, m: int, n: int, k: int) -> bool:
    """The cost model's choice for one GEMM: True where the one-tile template is estimated
    faster than ATen's (aclnn's) GEMM on this device."""
    from npu_inductor_core import cost_model
    from npu_inductor_core.device import device as npu_device

    tile = _first_tile(device.type)
    tile = (_scaled(tile[0], m), _scaled(tile[1], n), _scaled(tile[2], k))
    dev = npu_device(device.index or 0)
    template, aten = cost_model.gemm_seconds(batch, m, n, k, dtype.itemsize, tile, dev)
    return template < aten


def _triton_backend() -> bool:
    """Whether Inductor's GEMM backends include Triton templates."""
    from torch._inductor import config

    return "TRITON" in config.max_autotune_gemm_backends.upper().split(",")


def _on_npu(mat) -> bool:
    device = getattr(mat, "get_device", lambda: None)()
    return device is not None and device.type in DEVICES


def applies(mat1, mat2) -> bool:
    from torch._inductor import config

    if not enabled() or config.max_autotune or config.max_autotune_gemm:
        return False
    if not _triton_backend() or not _on_npu(mat1):
        return False
    try:
        device, dtypes = mat1.get_device(), {mat1.get_dtype(), mat2.get_dtype()}
    except AttributeError:
        return False
    if not dtypes <= set(DTYPES) or len(dtypes) != 1:
        return False
    if not _tiles_for(device.type):
        return False  # no template candidates for this device (npu-autotune not installed)
    a, b = _static_sizes(mat1), _static_sizes(mat2)
    if a is None or b is None or len(a) != len(b) or len(a) not in (2, 3) or a[-1] != b[-2]:
        return False
    if a[-2] == 1 or b[-1] == 1:
        # M=1 or N=1 (a single token, mv-like): upstream's template indexes A by ``rm % M``
        # (B by ``rn % N``), which folds to 0, a zero-stride pointer triton-ascend's
        # triton-adapter-opt refuses ("strides must not be zero"); ATen, as upstream
        return False
    macs, cap = math.prod(a[:-1]) * b[-1] * a[-1], max_macs()
    if macs <= 0 or (cap is not None and macs > cap):
        return False
    batch = a[0] if len(a) == 3 else 1
    return template_is_faster(device, dtypes.pop(), batch, a[-2], b[-1], a[-1])


def one_tile() -> bool:
    """True while a GEMM is lowered under the one-tile policy (upstream's template only)."""
    return _ONE_TILE.get()


@contextlib.contextmanager
def _one_tile_config():
    from torch._inductor import config

    token = _ONE_TILE.set(True)
    try:
        with config.patch(
            {
                "max_autotune_gemm": True,
                "max_autotune_gemm_backends": "TRITON",
                "test_configs.max_mm_configs": 1,
            }
        ):
            yield
    finally:
        _ONE_TILE.reset(token)


def _one_tile_lowering(target, *args, **kwargs):
    """Upstream's lowering of ``target`` under the one-tile policy (its template only)."""
    from torch._inductor.lowering import lowerings

    with _one_tile_config():
        return lowerings[target](*args, **kwargs)


def user_lowering(target, operands, chained=None):
    """torch 2.13: the entry of ``target`` in upstream's ``lowering.user_lowerings`` (consulted
    before ``lowerings[target]``, which runs when the entry returns None). A user's own entry
    found there is chained, not overwritten: it runs first, and the policy only where it returns
    None. Where the policy applies, upstream's lowering runs under the one-tile config; else
    None (upstream's lowering, unchanged)."""

    def lowering(*args, **kwargs):

        if chained is not None:
            out = chained(*args, **kwargs)
            if out is not None:
                return out
        mat1, mat2 = operands(args, kwargs)
        if _ignores_bias(target, kwargs) and _template_may_take(mat1, mat2):
            return _product_only(target, mat1, mat2, kwargs.get("alpha", 1))
        if not applies(mat1, mat2):
            return None
        return _one_tile_lowering(target, *args, **kwargs)

    lowering._npu_small_gemm = True
    lowering.chained = chained
    return lowering


def register_user_lowerings(registry: dict) -> bool:
    """Put the policy in ``registry`` (upstream's ``user_lowerings``) for every overload of
    mm / addmm / bmm / baddbmm that has an upstream lowering; True when something was added."""
    from torch._inductor.lowering import lowerings

    added = False
    for name, operands in OPS.items():
        packet = getattr(torch.ops.aten, name)
        for overload in packet.overloads():
            op = getattr(packet, overload)
            current = registry.get(op)
            if op not in lowerings or getattr(current, "_npu_small_gemm", False):
                continue
            registry[op] = user_lowering(op, operands, chained=current)
            added = True
    return added


def _two_first(args, kwargs):  # mm(a, b), bmm(a, b)
    return args[0], args[1]


def _after_bias(args, kwargs):  # addmm(bias, a, b), baddbmm(bias, a, b)
    return args[1], args[2]


OPS = {"mm": _two_first, "bmm": _two_first, "addmm": _after_bias, "baddbmm": _after_bias}


# addmm / baddbmm -> the product alone, for a bias ATen ignores
_PRODUCT = {"addmm": "mm", "baddbmm": "bmm"}


def _ignores_bias(target, kwargs) -> bool:
    """addmm / baddbmm with beta=0: ATen ignores the bias, so a NaN or inf in it stays out of
    the result. Upstream's template epilogue multiplies the bias by beta (0 x NaN is NaN):
    Ascend's adapted ``test_baddbmm`` (a NaN bias, beta=0) got NaN everywhere from npu's
    default-mode template."""
    beta = kwargs.get("beta", 1)
    return (
        target.overloadpacket.__name__ in _PRODUCT and isinstance(beta, (int, float)) and beta == 0
    )


def _template_may_take(mat1, mat2) -> bool:
    """Whether a Triton template may compute this npu GEMM: npu's default-mode policy, or
    upstream's max-autotune with TRITON among its GEMM backends (ATen alone ignores the bias
    itself)."""
    from torch._inductor import config

    if applies(mat1, mat2):
        return True
    autotuning = bool(config.max_autotune or config.max_autotune_gemm)
    return autotuning and _triton_backend() and _on_npu(mat1)


def _product_only(target, mat1, mat2, alpha):
    """``alpha * mat1 @ mat2`` for an addmm / baddbmm whose bias ATen ignores: the product
    lowered as mm / bmm (under the one-tile policy where it applies), never reading the bias."""
    from torch._inductor.lowering import lowerings

    product = getattr(torch.ops.aten, _PRODUCT[target.overloadpacket.__name__]).default
    lower = _one_tile_lowering if applies(mat1, mat2) else lambda op, *a: lowerings[op](*a)
    out = lower(product, mat1, mat2)
    return out if alpha == 1 else lowerings[torch.ops.aten.mul.Tensor](out, alpha)
