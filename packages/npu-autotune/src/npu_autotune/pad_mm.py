"""Shape padding of npu GEMMs, with upstream's autoheuristic (``autoheuristic_collect``
"pad_mm", ``autoheuristic_log_path``, ``autoheuristic_use`` "pad_mm").

Upstream's pad_mm pass is a joint-graph pattern whose check refuses any tensor that is not
cuda or xpu (``fx_passes/pad_mm.py: check_device``), so on npu it never runs. This is npu's
driver of the same decision, run in npu's post-grad pass (npu-lowering's device custom pass
asks npu-inductor-core's ``graph_hooks``; no patch): for each static ``aten.mm`` of npu
tensors whose M, K or N is not a multiple of the Cube's fractal edge C0 (32 bytes: 8 fp32,
16 fp16/bf16 elements, the device's choice of padding), with ``shape_padding`` on:

- ``force_shape_pad``: pad;
- not compute bound (arithmetic intensity under ``MIN_INTENSITY``): not padded, nothing timed;
- ``run_autoheuristic("pad_mm")``: upstream's ``run_autoheuristic`` with both variants run on
  npu (the unpadded mm, upstream's ``pad_mm`` replacement): collecting writes the timings to
  upstream's log (``autoheuristic_log_path``, default under the cache dir) and decides by
  them; using asks upstream's learned heuristics (``LearnedHeuristicController``), and their
  answer decides; none of upstream's learned heuristics is for an npu (they match an A100's /
  H100's shared memory and capability), so until one is learned from data collected on Ascend
  with this pass, "use" falls back to timing, as upstream does on an unknown GPU;
  torch 2.11 only: its ``AutoHeuristic`` asks torch.cuda for the device capability (2.13:
  (0, 0) without CUDA), which raises without a CUDA device; there (npu-sim, an Ascend host)
  the flags are not applied: a one-time warning, and the decision is timed as below;
- otherwise (and when the heuristic is unsure): both variants timed on npu, upstream's
  ``is_padded_faster`` (1.1x margin) decides; deterministic mode: never padded.

A padded mm becomes ``constant_pad_nd`` of the operands, the mm, and a slice of the result.
"""

from __future__ import annotations

import warnings

import torch
from torch._inductor import config
from npu_inductor_core.graph_hooks import call_function
from torch._inductor.fx_passes import pad_mm as upstream

aten = torch.ops.aten
FRACTAL_BYTES = 32  # the Cube's C0: 16 fp16/bf16 or 8 fp32 elements
# upstream asks first whether the mm is compute bound (arithmetic intensity MNK/(MK+KN+MN)
# above half the machine balance; its figures are GPUs'); npu's bound: a Cube-sized problem
# (a 128^3 GEMM has 42.7), below which padding only adds memory traffic and is not timed
MIN_INTENSITY = 32.0


def alignment(dtype: torch.dtype) -> int:
    return max(1, FRACTAL_BYTES // dtype.itemsize)


def _static_npu(t) -> bool:
    return (
        isinstance(t, torch.Tensor)
        and t.device.type == "npu"
        and t.dtype in (torch.float16, torch.bfloat16, torch.float32)
        and t.dim() == 2
        and all(isinstance(s, int) for s in t.shape)
        and min(t.shape) > 0
    )


def _do_bench(fn) -> float:
    from .benchmarker import benchmark_npu

    return benchmark_npu(None, fn, warmup=1, rep=5, is_vetted_benchmarking=True)


def should_pad(a, b, mp: int, kp: int, np_: int) -> bool:
    """The decision for an npu mm of real tensors ``a`` @ ``b`` (see the module docstring)."""
    if config.force_shape_pad:
        return True
    (m, k), n = a.shape, b.shape[1]
    if m * n * k / (m * k + k * n + m * n) < MIN_INTENSITY:
        return False

    def orig():
        return torch.mm(a, b)

    def pad():
        return upstream.pad_mm(a, b, mp, kp, np_)

    key = f"npu:{tuple(a.shape)}:{tuple(b.shape)}:{a.dtype}:{mp},{kp},{np_}"
    if config.run_autoheuristic("pad_mm") and _autoheuristic_usable():
        decided = upstream.run_autoheuristic(
            a, b, orig, pad, mp, kp, np_, _do_bench, False, False, None, key + ":ori", key
        )
        if decided is not None:
            return decided
    if config.deterministic:
        return False
    return upstream.is_padded_faster(key, _do_bench(orig), _do_bench(pad))


def _autoheuristic_usable() -> bool:
    from . import _compat

    if _compat.autoheuristic_builds():
        return True
    if not getattr(_autoheuristic_usable, "warned", False):
        _autoheuristic_usable.warned = True
        warnings.warn(
            'npu pad_mm: autoheuristic_collect/autoheuristic_use "pad_mm" not applied: this torch\'s '
            "AutoHeuristic needs a CUDA device (torch 2.11 only; 2.13 builds it without one); "
            "the padding decision is timed instead"
        )
    return False


def _rewrite(gm, node, m: int, n: int, mp: int, kp: int, np_: int) -> None:
    g = gm.graph
    a, b = node.args
    with g.inserting_before(node):
        if kp or mp:
            a = call_function(g, aten.constant_pad_nd.default, (a, [0, kp, 0, mp]), like=node)
        if kp or np_:
            b = call_function(g, aten.constant_pad_nd.default, (b, [0, np_, 0, kp]), like=node)
        out = call_function(g, aten.mm.default, (a, b), like=node)
        if mp:
            out = call_function(g, aten.slice.Tensor, (out, 0, 0, m), like=node)
        if np_:
            out = call_function(g, aten.slice.Tensor, (out, 1, 0, n), like=node)
    node.replace_all_uses_with(out)
    g.erase_node(node)


def apply(gm: torch.fx.GraphModule) -> int:
    """Pad the npu mm nodes of a post-grad graph that should be; returns how many."""
    if not config.shape_padding:
        return 0
    padded = 0
    for node in list(gm.graph.find_nodes(op="call_function", target=aten.mm.default)):
        x, y = (
            arg.meta.get("val") if isinstance(arg, torch.fx.Node) else None for arg in node.args
        )
        if not (_static_npu(x) and _static_npu(y)) or x.dtype != y.dtype:
            continue
        (m, k), n = x.shape, y.shape[1]
        align = alignment(x.dtype)
        mp, kp, np_ = (upstream.get_padded_length(s, align) for s in (m, k, n))
        if not (mp or kp or np_):
            continue
        with torch.utils._python_dispatch._disable_current_modes():
            a = torch.randn(m, k, dtype=x.dtype, device=x.device)
            b = torch.randn(k, n, dtype=y.dtype, device=y.device)
            pad = should_pad(a, b, mp, kp, np_)
        if pad:
            _rewrite(gm, node, m, n, mp, kp, np_)
            padded += 1
    if padded:
        gm.graph.lint()
        gm.recompile()
    return padded


def cache_key() -> str:
    """What of this pass changes graphs beyond upstream's flags (those are in the FX key)."""
    return f"npu-pad-mm-1-c0{FRACTAL_BYTES}"
