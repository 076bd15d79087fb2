"""The remote GEMM autotune cache in the compile path: npu GEMM autotuning asks the shared
GEMM cache before it benchmarks, and shares what it tuned.

On npu, ``tuned_mm``/``tuned_addmm``/``tuned_bmm`` choose among ATen and upstream's Triton
templates (tiles from npu-autotune) through ``select_algorithm``. Two upstream registration
APIs of ``select_algorithm`` carry it, no patch:

- ``add_preprocessing_fn``: before benchmarking, the choices of an npu GEMM are looked up by
  ``GemmKey`` (device fingerprint, op, M/N/K buckets, dtypes, layouts). A hit whose config is
  among the choices leaves only that choice, so nothing is compiled for benchmarking and
  nothing is timed (upstream returns a lone choice directly). A hit whose config is not
  offered here (other tiles, other backends) is "stale": the choices stay as they are.
- ``add_feedback_saver``: after a local autotune, the fastest choice's config and time are
  published (``GemmAutotuneCache.publish`` keeps the faster of two results).

Upstream's own hook for this (``remote_gemm_autotune_cache`` -> ``gen_best_config``) is
fbcode-only, exists for ``mm`` alone, and its choice filter keeps every match once per key;
the flag is what we read. Everything here acts on npu GEMMs only.
"""

from __future__ import annotations

import math
import re
import threading

from .counters import Counters
from .gemm_autotune import GemmKey, device_fingerprint, open_gemm_autotune_cache

# the parameters that make a Triton GEMM choice; EVEN_K and the like follow from the shape
TEMPLATE_KEYS = (
    "BLOCK_M",
    "BLOCK_N",
    "BLOCK_K",
    "GROUP_M",
    "num_stages",
    "num_warps",
    "ALLOW_TF32",
)
_PARAM = re.compile(r"(\w+)=('[^']*'|[^,\s]+)")
OPS = {(2, 2): "mm", (2, 3): "addmm", (3, 2): "bmm", (3, 3): "baddbmm"}

counters = Counters()
_lock = threading.Lock()
_installed = False


def enabled() -> bool:
    from torch._inductor import config

    return bool(config.remote_gemm_autotune_cache)


def _hints(sizes) -> list[int] | None:
    from torch._inductor.virtualized import V

    try:
        return [int(s) for s in V.graph.sizevars.size_hints(sizes)]
    except Exception:  # no graph (called outside a compile) or unhinted symbols
        try:
            return [int(s) for s in sizes]
        except (TypeError, ValueError):
            return None


def _layout(node) -> str | None:
    stride = _hints(node.get_stride())
    if stride is None:
        return None
    if stride[-1] == 1:
        return "row"
    if stride[-2] == 1:
        return "col"
    return None


def gemm_key(input_nodes, layout) -> GemmKey | None:
    """The shared-cache key of an npu mm/addmm/bmm/baddbmm, or None for anything else."""
    if (
        layout is None
        or getattr(layout.device, "type", None) != "npu"
        or len(input_nodes) not in (2, 3)
    ):
        return None
    a, b = input_nodes[-2], input_nodes[-1]
    try:
        sa, sb = _hints(a.get_size()), _hints(b.get_size())
        la, lb = _layout(a), _layout(b)
        dtypes = [str(x.get_dtype()).removeprefix("torch.") for x in (a, b)] + [
            str(layout.dtype).removeprefix("torch.")
        ]
    except (AttributeError, NotImplementedError, IndexError):
        return None
    if sa is None or sb is None or len(sa) != len(sb) or len(sa) not in (2, 3) or sa[-1] != sb[-2]:
        return None
    if la is None or lb is None or min(sa + sb) <= 0:
        return None
    op = OPS[(len(sa), len(input_nodes))]
    if dtypes[0] == "int8" and op == "mm":
        op = "int_mm"
    return GemmKey(
        device=device_fingerprint(),
        m=sa[-2],
        n=sb[-1],
        k=sa[-1],
        dtype_a=dtypes[0],
        dtype_b=dtypes[1],
        dtype_out=dtypes[2],
        layout_a=la,
        layout_b=lb,
        op=op,
        batch=sa[0] if len(sa) == 3 else 1,
    )


def choice_config(choice) -> dict | None:
    """What identifies a choice across shapes of one bucket: its kind and its tile."""
    from torch._inductor.select_algorithm import ExternKernelCaller, TritonTemplateCaller

    if isinstance(choice, TritonTemplateCaller):
        params = dict(_PARAM.findall(choice.description or ""))
        return {
            "kind": choice.name.rsplit("_", 1)[0],
            **{k: params[k] for k in TEMPLATE_KEYS if k in params},
        }
    if isinstance(choice, ExternKernelCaller):
        return {"kind": f"aten:{choice.name}"}
    return None


def use_shared_best(choices: list) -> list:
    """Preprocessing function: a remote hit narrows an npu GEMM's choices to the shared one."""
    if not choices or not enabled():
        return choices
    key = gemm_key(choices[0].input_nodes, choices[0].layout)
    if key is None:
        return choices
    found = open_gemm_autotune_cache().query(key)
    if found is None:
        counters.add("tuned_locally")
        return choices
    wanted = found["config"]
    for choice in choices:
        if choice_config(choice) == wanted:
            counters.add("served")
            return [choice]
    counters.add("stale")  # tuned with tiles or backends this compile does not offer
    return choices


def publish_local_result(timings, name, input_nodes, choices, *_rest) -> None:
    """Feedback saver: share the fastest choice of a local npu GEMM autotune."""
    if not timings or not enabled():
        return
    key = gemm_key(input_nodes, choices[0].layout if choices else None)
    if key is None:
        return
    best = min(timings, key=timings.get)
    ms = timings[best]
    config = choice_config(best)
    if config is None or not (isinstance(ms, (int, float)) and math.isfinite(ms) and ms > 0):
        return
    if open_gemm_autotune_cache().publish(key, config, ms * 1000.0):
        counters.add("published")


def install() -> None:
    """Register both functions with upstream's algorithm selector (once per process)."""
    global _installed
    with _lock:
        if _installed:
            return
        from torch._inductor import select_algorithm

        if not hasattr(
            select_algorithm, "add_preprocessing_fn"
        ):  # torch 2.11 lacks it: no remote GEMM autotune cache there
            return
        select_algorithm.add_preprocessing_fn(use_shared_best)
        select_algorithm.add_feedback_saver(publish_local_result)
        _installed = True
