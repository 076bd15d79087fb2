"""Structured logs and timings.

Every event is one record on the ``npu_graphtree`` logger with the same fields (compile id,
function name, mode, input shapes/strides, path, generation), also sent to upstream's
``cudagraphs`` artifact logger so ``TORCH_LOGS="+cudagraphs"`` shows ours next to
upstream's. Warmup/record (and, when asked, replay) durations are kept per compile id and
mode and passed to Dynamo's ``dynamo_timed`` so they land in the same metrics as upstream's.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from dataclasses import dataclass
from typing import Any

import torch

from . import _compat

log = logging.getLogger("npu_graphtree")
_torch_log = torch._logging.getArtifactLogger("torch._inductor.cudagraph_trees", "cudagraphs")


def format_inputs(inputs) -> str:
    parts = []
    for i, x in enumerate(inputs):
        if isinstance(x, torch.Tensor):
            parts.append(
                f"{i}:{tuple(x.shape)}/{tuple(x.stride())}/{str(x.dtype).replace('torch.', '')}"
            )
        elif isinstance(x, (int, float, bool)) or x is None:
            parts.append(f"{i}:{x!r}")
        else:
            parts.append(f"{i}:{type(x).__name__}")
    return "[" + ", ".join(parts) + "]"


def event(name: str, level: int = logging.INFO, *, fn=None, inputs=None, **fields: Any) -> None:
    """One structured record: ``event=<name> key=value ...``; the fields also ride on the
    LogRecord as ``record.graphtree`` (a dict) for tools."""
    if not (log.isEnabledFor(level) or _torch_log.isEnabledFor(level)):
        return
    data: dict[str, Any] = {"event": name}
    if fn is not None:
        data.update(
            compile_id=str(fn.compile_id) if fn.compile_id is not None else None,
            function=fn.name,
            mode=fn.mode.name,
        )
    if inputs is not None:
        data["inputs"] = format_inputs(inputs)
    data.update(fields)
    msg = " ".join(f"{k}={v}" for k, v in data.items())
    log.log(level, msg, extra={"graphtree": data})
    if _torch_log.isEnabledFor(level):
        _torch_log.log(level, "[npu_graphtree] %s", msg)


@dataclass(frozen=True)
class Timing:
    phase: str  # warmup | record | replay
    compile_id: str | None
    mode: str  # FORWARD | BACKWARD | INFERENCE
    function: str
    seconds: float


_timings: list[Timing] = []
_timings_lock = threading.Lock()


def timings() -> list[Timing]:
    with _timings_lock:
        return list(_timings)


def clear_timings() -> None:
    with _timings_lock:
        _timings.clear()


@contextlib.contextmanager
def timed(phase: str, fn):
    """Time a phase of ``fn`` under its CompileId and mode (FORWARD/BACKWARD/INFERENCE)."""
    start = time.perf_counter()
    if phase == "replay" or not _compat.dynamo_timed_usable():  # hot path: no Dynamo bookkeeping
        ctx = contextlib.nullcontext()
    else:
        from torch._dynamo.utils import dynamo_timed

        ctx = dynamo_timed(
            f"npu_graphtree.{phase}",
            log_pt2_compile_event=True,
            compile_id=fn.compile_id,
            is_backward=fn.mode.name == "BACKWARD",
            dynamo_compile_column_us="runtime_cudagraphify_time_us",
        )
    with ctx:
        yield
    t = Timing(
        phase,
        str(fn.compile_id) if fn.compile_id is not None else None,
        fn.mode.name,
        fn.name,
        time.perf_counter() - start,
    )
    with _timings_lock:
        _timings.append(t)
        del _timings[:-10000]  # bounded
