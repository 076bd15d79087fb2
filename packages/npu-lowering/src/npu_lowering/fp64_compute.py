"""The opt-in float64-in-float32 compute on npu (issue 19 item 2).

Ascend's vector cores have no float64. By default (``npu_lowering.config.fp64_compute =
"fp64"``) nothing is narrowed: a float64 node lowers to the device's ATen op
(``dtype_policy``), and results are exactly eager's. With ``fp64_compute = "fp32"`` (env
``NPU_LOWERING_FP64_COMPUTE=fp32``) the user accepts float32 arithmetic for float64 values:
the post-grad pass rewrites the graph so each float64 value is computed in float32 (a
float64 input is converted once, float64 dtypes in op arguments become float32) and
converted back to float64 where the graph returns it or an op mutates a float64 tensor.
The converts themselves stay the device's ATen casts (the dtype policy's fallback for
float64 nodes): triton-ascend 3.2.0 refuses any float64 load or store ("[fp8, fp64] is
unsupported on Ascend"), so npu kernels see float32 only. Each kernel computing narrowed
values says so in a comment in its source, and its first compile in a process warns naming
it (``NpuScheduling.define_kernel``). Outputs keep eager's dtypes; only the precision is
float32.
"""

from __future__ import annotations

import operator
import warnings

import torch
from torch.utils._pytree import tree_leaves, tree_map

from npu_inductor_core import env_config

MODES = ("fp64", "fp32")
ENV = "NPU_LOWERING_FP64_COMPUTE"
MARK = "# npu-lowering: float64 computed in float32 (npu_lowering.config.fp64_compute='fp32')"
_prims_convert = torch.ops.prims.convert_element_type.default
# ops whose float64 operand cannot become float32 (a bitcast view reads the bits)
_KEEP_WIDE = {torch.ops.aten.view.dtype}


def mode() -> str:
    from . import config

    return env_config.check(config, "fp64_compute", lambda v: v in MODES, " or ".join(MODES), ENV)


def narrowing() -> bool:
    return mode() == "fp32"


def _has_fp64(val) -> bool:
    return any(isinstance(v, torch.Tensor) and v.dtype == torch.float64 for v in tree_leaves(val))


def _fake_mode(gm):
    from torch._guards import detect_fake_mode

    return detect_fake_mode([n.meta.get("val") for n in gm.graph.nodes if n.op == "placeholder"])


def narrow(gm: torch.fx.GraphModule) -> int:
    """Rewrite ``gm`` so float64 values are computed in float32 (``fp64_compute="fp32"``);
    returns how many nodes now compute in float32 (0 when not opted in)."""
    if not narrowing():
        return 0
    graph, fake = gm.graph, _fake_mode(gm)
    narrow_of: dict[torch.fx.Node, torch.fx.Node] = {}  # float64 node -> its float32 twin
    converted: dict[torch.fx.Node, torch.fx.Node] = {}  # float64 input -> its float32 convert
    count = 0

    def convert(node, dtype, before):
        with graph.inserting_before(before):
            new = graph.call_function(_prims_convert, (node, dtype))
        with fake:
            new.meta["val"] = _prims_convert(node.meta["val"], dtype)
        return new

    def as_fp32(arg, user):
        if not isinstance(arg, torch.fx.Node) or not _has_fp64(arg.meta.get("val")):
            return narrow_of.get(arg, arg) if isinstance(arg, torch.fx.Node) else arg
        if arg in narrow_of:
            return narrow_of[arg]
        if arg not in converted:
            if not isinstance(arg.meta.get("val"), torch.Tensor):
                return arg
            converted[arg] = convert(arg, torch.float32, user)
        return converted[arg]

    def as_fp64(arg, user):
        if isinstance(arg, torch.fx.Node) and arg in narrow_of:
            return convert(narrow_of[arg], torch.float64, user)
        return arg

    for node in list(graph.nodes):
        if node.op == "output":
            node.args = tree_map(lambda a: as_fp64(a, node), node.args)
            continue
        if node.op != "call_function":
            continue
        inputs = node.all_input_nodes
        touches = (
            _has_fp64(node.meta.get("val"))
            or any(i in narrow_of for i in inputs)
            or any(_has_fp64(i.meta.get("val")) for i in inputs)
            or torch.float64 in tree_leaves((node.args, node.kwargs))
        )
        if not touches:
            continue
        schema = getattr(node.target, "_schema", None)
        if node.target in _KEEP_WIDE or (schema is not None and schema.is_mutable):
            node.args, node.kwargs = tree_map(lambda a: as_fp64(a, node), (node.args, node.kwargs))
            continue
        swap = lambda a: torch.float32 if a is torch.float64 else as_fp32(a, node)  # noqa: E731
        args, kwargs = tree_map(swap, (node.args, node.kwargs))
        try:
            with fake:
                val = node.target(
                    *tree_map(lambda a: a.meta["val"] if isinstance(a, torch.fx.Node) else a, args),
                    **tree_map(
                        lambda a: a.meta["val"] if isinstance(a, torch.fx.Node) else a, kwargs
                    ),
                )
        except Exception:  # an op that does not take float32 here: it keeps float64 operands
            node.args, node.kwargs = tree_map(lambda a: as_fp64(a, node), (node.args, node.kwargs))
            continue
        with graph.inserting_before(node):
            new = graph.call_function(node.target, args, kwargs)
        new.meta = {**node.meta, "val": val, "npu_fp64_compute": "fp32"}
        count += 1
        if (
            _has_fp64(node.meta.get("val"))
            or node.target is operator.getitem
            and node.args[0] in narrow_of
        ):
            narrow_of[node] = new  # users are rewritten as they come; the output converts back
        else:
            node.replace_all_uses_with(new)
    graph.eliminate_dead_code()
    graph.lint()
    gm.recompile()
    return count


_warned: set[str] = set()


def _narrowed(node_schedule) -> bool:
    for snode in node_schedule or ():
        for inner in snode.get_nodes() if hasattr(snode, "get_nodes") else ():
            origins = getattr(getattr(inner, "node", None), "origins", None) or ()
            if any(o.meta.get("npu_fp64_compute") for o in origins):
                return True
    return False


def mark_kernel(src_code: str, node_schedule) -> str:
    """A kernel computing float64 values in float32 (the opt-in) says so in its source."""
    if narrowing() and _narrowed(node_schedule):
        return f"{MARK}\n{src_code}"
    return src_code


def warn_once(kernel_name: str, src_code: str) -> None:
    if MARK in src_code and kernel_name not in _warned:
        _warned.add(kernel_name)
        warnings.warn(
            f"npu-lowering: kernel {kernel_name} computes float64 values in float32 "
            f"(npu_lowering.config.fp64_compute='fp32', {ENV}); results are float64 "
            f"with float32 precision",
            UserWarning,
            stacklevel=2,
        )
