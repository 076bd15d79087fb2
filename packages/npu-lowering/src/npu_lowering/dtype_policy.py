"""What happens to a graph node whose dtype npu kernels do not take: the one place that decides.

Ascend's vector cores compute bool, 8/16/32-bit integers, int64, float16, bfloat16 and float32
(``KERNEL_DTYPES``). A node that reads or writes an npu tensor of any other dtype (float64,
complex, float8, uint16/32/64, ...) is lowered to the device's ATen op instead of a Triton
kernel (0-d CPU tensors too: Inductor computes them inside npu kernels), as upstream falls
back for ops it cannot lower: the post-grad pass marks the node
with upstream's per-node hook ``node.meta["should_fallback"]`` and
``GraphLowering.call_function`` builds a ``FallbackKernel`` for it. The rest of the graph is
lowered and fused as usual. Each fallback is logged once per (op, dtype) in a process and
counted (in this process: ``counts()``; across processes, for ``npu-inductor doctor``: a small
JSON file in Inductor's cache dir, ``doctor_report``).

Policy (``npu_lowering.config.dtype_policy``, default from ``NPU_LOWERING_DTYPE_POLICY``):
``fallback`` (default) or ``error`` (raise ``UnsupportedDtype`` naming the op and dtype, for
users who want no ATen fallback). The float64 opt-in (``fp64_compute``: float64 values
computed in float32) runs before this pass; ``decisions_now()`` shows it in the doctor. The config module is part of the FX graph cache key (npu's ``device_custom_config``)
and ``settings_key()`` (the dtype set) enters it through ``NpuPostGradPass.uuid``, so a
changed policy never serves stale code.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import threading
from pathlib import Path

import torch
from npu_inductor_core import env_config

from . import fp64_compute

log = logging.getLogger(__name__)

KERNEL_DTYPES = frozenset(
    {
        torch.bool,
        torch.int8,
        torch.uint8,
        torch.int16,
        torch.int32,
        torch.int64,
        torch.float16,
        torch.bfloat16,
        torch.float32,
    }
)
# why a dtype is not in KERNEL_DTYPES, for messages; anything else: "not an npu kernel dtype"
WHY = {
    torch.float64: "Ascend vector cores have no float64",
    torch.complex64: "npu kernels have no complex arithmetic",
    torch.complex128: "npu kernels have no complex arithmetic",
    torch.complex32: "npu kernels have no complex arithmetic",
    torch.float8_e4m3fn: "float8 needs the cube unit's GEMM path, not vector kernels",
    torch.float8_e5m2: "float8 needs the cube unit's GEMM path, not vector kernels",
}
# What npu kernels do with each dtype family (issue 19 item 2), for the README and the doctor:
# correctness first; nothing is computed in a narrower type than eager computes it in.
DECISIONS = (
    ("float64", "ATen per node", "Ascend vector cores have no float64; never narrowed to float32"),
    (
        "int64",
        "native in kernels",
        "triton-ascend emulates 64-bit integer ops on 32-bit lanes: exact, slower; "
        "index arithmetic is int64 where Inductor needs it (int32 when the sizes fit)",
    ),
    ("uint8", "native in kernels", "wraps modulo 256 as eager does"),
    ("uint16/uint32/uint64", "ATen per node", "not an npu kernel dtype"),
    (
        "bool",
        "native in kernels",
        "ordering compares of two bools as int8 (bishengir has no i1 ordering)",
    ),
    (
        "complex64/complex128",
        "ATen per node",
        "no complex arithmetic in npu kernels; with functorch's "
        "enable_complex_wrapper the math is real/imag float kernels",
    ),
    ("float8", "ATen per node", "the cube unit's GEMM path, not vector kernels"),
)
# the float64 row under the opt-in (npu_lowering.config.fp64_compute = "fp32", fp64_compute.py)
FP64_OPT_IN = (
    "float64",
    "float32 in npu kernels (opt-in)",
    "fp64_compute='fp32': float64 values computed in float32, the float64 <-> float32 casts "
    "at their edges ATen ops; each such kernel says so in its source and warns once, naming itself",
)


def decisions_now() -> tuple:
    """``DECISIONS`` as the current settings make them (the float64 opt-in)."""
    try:
        narrowed = fp64_compute.narrowing()
    except ValueError:
        narrowed = False
    return tuple(FP64_OPT_IN if narrowed and row[0] == "float64" else row for row in DECISIONS)


POLICIES = ("fallback", "error")
ENV = "NPU_LOWERING_DTYPE_POLICY"
COUNTS_FILE = "npu_lowering_dtype_fallbacks.json"


class UnsupportedDtype(TypeError):
    pass


def policy() -> str:
    from . import config

    raw = config.dtype_policy
    value = (raw.strip().lower() or "fallback") if isinstance(raw, str) else raw
    if value not in POLICIES:
        raise ValueError(
            f"{ENV}={value!r}: expected one of {', '.join(POLICIES)} "
            f"(npu_lowering.config.dtype_policy)"
        )
    return value


def settings_key() -> str:
    """What decides besides the policy (which the config module puts in the FX graph cache
    key): the dtypes npu kernels take."""
    dtypes = ",".join(sorted(str(d).removeprefix("torch.") for d in KERNEL_DTYPES))
    return f"kernel-dtypes[{dtypes}]"


def _kernel_tensors(value):
    """The tensors of ``value`` an npu kernel would compute on: npu tensors, and 0-d CPU
    tensors, which Inductor inlines into device kernels as scalar arguments (a float Dynamo
    did not specialize, e.g. ``math.pi`` in GPT-2's gelu under dynamic shapes, is a float64
    0-d CPU tensor whose arithmetic would land in an npu kernel)."""
    for leaf in torch.utils._pytree.tree_leaves(value):
        if isinstance(leaf, torch.Tensor) and (
            leaf.device.type == "npu" or (leaf.device.type == "cpu" and leaf.dim() == 0)
        ):
            yield leaf


def foreign_dtype(node: torch.fx.Node) -> torch.dtype | None:
    """The first dtype among the node's npu (and 0-d CPU) outputs and inputs that npu kernels
    do not take."""
    values = [node.meta.get("val")]
    values += [a.meta.get("val") for a in node.all_input_nodes]
    for value in values:
        for t in _kernel_tensors(value):
            if t.dtype not in KERNEL_DTYPES:
                return t.dtype
    return None


def _returns_tensors(node: torch.fx.Node) -> bool:
    """A node whose result is a Python scalar (``.item()`` of a float64 tensor: Inductor reads
    it in the wrapper, no kernel) keeps its lowering: a ``FallbackKernel`` returns tensors only."""
    leaves = torch.utils._pytree.tree_leaves(node.meta.get("val"))
    return bool(leaves) and all(isinstance(v, torch.Tensor) or v is None for v in leaves)


def op_name(target) -> str:
    return (
        str(target)
        if isinstance(target, torch._ops.OpOverload)
        else getattr(target, "__name__", str(target))
    )


# (op, dtype) -> nodes lowered as fallbacks in this process
_counts: collections.Counter = collections.Counter()
_lock = threading.Lock()


def counts() -> dict[tuple[str, str], int]:
    with _lock:
        return dict(_counts)


def apply(gm: torch.fx.GraphModule) -> list[tuple[str, str]]:
    """Mark each node of ``gm`` that npu kernels cannot compute for ATen fallback (or raise
    under the ``error`` policy); returns the (op, dtype) of each marked node."""
    mode = policy()
    marked = []
    for node in gm.graph.nodes:
        if node.op != "call_function":
            continue
        dtype = foreign_dtype(node)
        if dtype is None or not _returns_tensors(node):
            continue
        name, why = op_name(node.target), WHY.get(dtype, "not a dtype npu kernels take")
        if mode == "error":
            raise UnsupportedDtype(
                f"npu-lowering: {name} computes {dtype} on npu ({why}) and "
                f"{ENV}=error forbids the ATen fallback"
            )
        # upstream's per-node hook (GraphLowering.call_function): lowered as a FallbackKernel;
        # only ATen/prims ops can be; anything else keeps its own lowering
        if isinstance(node.target, torch._ops.OpOverload):
            node.meta["should_fallback"] = True
            marked.append((name, str(dtype).removeprefix("torch.")))
            if _cpp_wrapper():
                node.target = _scalar_overload(node) or node.target
    if marked:
        _record(marked)
    return marked


def _cpp_wrapper() -> bool:
    from torch._inductor import config
    from torch._inductor.virtualized import V

    return bool(config.cpp_wrapper or V.aot_compilation)


def _scalar_overload(node: torch.fx.Node):
    """A C++ wrapper calls a fallback through upstream's C shim or proxy executor, which take
    a Tensor argument only as a buffer: a Python number there (``aten.mul.Tensor(x, 2.0)``)
    fails its codegen. The op's ``.Scalar`` overload takes the number as a Scalar: the same
    ATen computation. None when there is none or nothing to change."""
    schema = node.target._schema
    numbers = [
        i
        for i, (a, v) in enumerate(zip(schema.arguments, node.args))
        if isinstance(a.type, torch.TensorType) and isinstance(v, (int, float, bool))
    ]
    if not numbers or node.kwargs or "Scalar" not in node.target.overloadpacket.overloads():
        return None
    candidate = node.target.overloadpacket.Scalar
    theirs = candidate._schema.arguments
    if len(theirs) != len(schema.arguments) or not all(
        isinstance(theirs[i].type, torch.NumberType) for i in numbers
    ):
        return None
    same = all(
        str(a.type) == str(b.type)
        for i, (a, b) in enumerate(zip(schema.arguments, theirs))
        if i not in numbers
    )
    return candidate if same else None


def _record(marked: list[tuple[str, str]]) -> None:
    with _lock:
        new = [key for key in dict.fromkeys(marked) if key not in _counts]
        _counts.update(marked)
    for name, dtype in new:
        log.warning(
            "npu-lowering: %s on %s falls back to the device's ATen op (npu kernels take no %s; "
            "npu-inductor doctor counts these)",
            name,
            dtype,
            dtype,
        )
    try:
        _persist(marked)
    except OSError as exc:  # the count is a diagnostic: never fail a compile for it
        log.debug("npu-lowering: dtype fallback counts not saved: %s", exc)


def counts_path() -> Path:
    from torch._inductor.runtime.cache_dir_utils import default_cache_dir

    return Path(env_config.text("TORCHINDUCTOR_CACHE_DIR") or default_cache_dir()) / COUNTS_FILE


def _persist(marked: list[tuple[str, str]]) -> None:
    from filelock import FileLock

    path = counts_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock", timeout=10):
        saved = _load(path)
        for name, dtype in marked:
            key = f"{name} {dtype}"
            saved[key] = saved.get(key, 0) + 1
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(saved, indent=1, sort_keys=True))
        os.replace(tmp, path)


def _load(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return (
        {str(k): int(v) for k, v in data.items() if isinstance(v, int)}
        if isinstance(data, dict)
        else {}
    )


def doctor_report(shown: int = 12) -> dict:
    """For ``npu-inductor doctor`` (entry point ``npu_inductor.doctor_reports``): the dtype
    policy and the nodes compiled as ATen fallbacks (by every process using this cache dir)."""
    path = counts_path()
    saved = _load(path)
    ranked = sorted(saved.items(), key=lambda kv: (-kv[1], kv[0]))
    rows = [f"{key}: {n}" for key, n in ranked[:shown]]
    if len(ranked) > shown:
        rows.append(f"... {len(ranked) - shown} more (--json lists all)")
    try:
        mode, status = policy(), "ok"
    except ValueError as exc:
        mode, status = str(exc), "error"
    decisions = decisions_now()
    rows = [f"{dtype}: {what} ({why})" for dtype, what, why in decisions] + rows
    return {
        "status": status,
        "policy": mode,
        "path": str(path),
        "counts": saved,
        "rows": rows,
        "decisions": {dtype: what for dtype, what, _ in decisions},
        "summary": (
            f"dtype policy {mode}; {sum(saved.values())} node(s) of {len(saved)} op/dtype "
            f"pair(s) compiled as ATen fallbacks ({path})"
        ),
    }
