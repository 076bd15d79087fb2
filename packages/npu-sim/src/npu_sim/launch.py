"""Kernel launch entry: run a Triton kernel on npu memory in Triton's interpreter.

The launcher and lowering packages reach this through the entry point
``npu_inductor.sim_launch: launch``. Arguments on npu are passed as CPU tensors aliasing
their memory (no copies). While the calling thread captures a graph, the launch is recorded
instead of run; the recording keeps addresses, not tensors, as a device graph does.
TRITON_INTERPRET is not needed (and not set: it would change cuda compiles in the process).

``debug`` and ``sanitize_overflow`` in ``constexprs`` are Triton's compile options of those
names, not kernel arguments: with ``debug`` true the kernel's ``tl.device_assert`` calls are
checked (a failing one raises), as a GPU kernel compiled with ``debug=True`` traps; Triton's
interpreter otherwise skips them. ``sanitize_overflow`` (Triton's default: on) adds integer
overflow asserts to arithmetic under ``debug``; Inductor compiles with it off.
``fp64_args`` (a comma-separated string of parameter names, also not an argument) names the
Python-float arguments the kernel's signature types ``fp64`` (Inductor's
``_use_fp64_for_unbacked_floats``); every other Python float is ``fp32``, Triton's JIT type
for one. Triton's interpreter passes a Python float on as a bare float, so a kernel's
``ks0.to(tl.float32)`` would fail: such arguments become 0-d interpreter scalars of their type.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
from typing import Any, Sequence

import torch

from . import _compat
from ._runtime import ext


@functools.lru_cache(maxsize=None)
def _interpreted(fn: Any):
    from triton.runtime.interpreter import InterpretedFunction
    from triton.runtime.jit import JITFunction

    _compat.interpret_nested_jit_calls()
    _compat.interpret_npu_kernels()
    if isinstance(fn, InterpretedFunction):
        return fn
    if isinstance(fn, JITFunction):
        return InterpretedFunction(fn.fn)
    raise TypeError(f"npu-sim launch: expected a @triton.jit function, got {type(fn).__name__}")


OPTIONS = ("debug", "sanitize_overflow")  # Triton compile options a launch may carry


@contextlib.contextmanager
def _interpreter_options(options: dict):
    """Triton's interpreter checks ``tl.device_assert`` only when its options say ``debug``
    (``semantic.device_assert``); this run's options, restored afterwards."""
    from triton.runtime.interpreter import interpreter_builder

    prev = interpreter_builder.options
    interpreter_builder.options = dataclasses.replace(
        prev, **{k: bool(v) for k, v in options.items()}
    )
    try:
        yield
    finally:
        interpreter_builder.options = prev


def _host_view(arg: Any, device: list[int]) -> Any:
    if isinstance(arg, torch.Tensor) and arg.device.type == "npu":
        if device and device[0] != arg.device.index:
            raise ValueError(
                f"npu-sim launch: arguments on npu:{device[0]} and npu:{arg.device.index}"
            )
        device[:] = [arg.device.index]
        return ext()._cpu_alias(arg)
    if isinstance(arg, tuple):
        return tuple(_host_view(a, device) for a in arg)
    return arg


def _float_scalar(value: float, fp64: bool) -> Any:
    import numpy as np
    import triton.language as tl
    from triton.runtime.interpreter import TensorHandle

    ty = tl.float64 if fp64 else tl.float32
    return tl.tensor(
        TensorHandle(np.array([value], dtype=np.float64 if fp64 else np.float32), ty), ty
    )


def _typed_floats(names: Sequence[str], args: tuple, fp64: set) -> tuple:
    return tuple(
        _float_scalar(a, name in fp64) if type(a) is float else a
        for name, a in zip((*names, *[None] * len(args)), args)
    )


eager_launches = (
    0  # kernels launched outside capture and replay (benches: share replayed from graphs)
)


def device_op_counts() -> tuple[int, int]:
    """(device operations run outside a graph: fallback ops and kernel launches, operations run
    by graph replays): bench/capture_rules.py's share of kernels replayed from a graph."""
    eager_ops, replayed = ext()._device_op_counts()
    return eager_ops + eager_launches, replayed


def launch(
    fn: Any, grid: Sequence[int], args: Sequence[Any], constexprs: dict[str, Any] | None = None
) -> None:
    """Run ``fn[grid](*args, **constexprs)`` on npu-sim (or record it during capture)."""
    kernel = _interpreted(fn)
    device: list[int] = []
    host_args = tuple(_host_view(a, device) for a in args)
    constexprs = dict(constexprs or {})
    # (a kernel with a parameter of such a name gets it as an argument)
    params = getattr(kernel, "arg_names", ())
    options = {
        "debug": False,
        **{k: constexprs.pop(k) for k in OPTIONS if k in constexprs and k not in params},
    }
    fp64 = set(
        filter(
            None,
            str(constexprs.pop("fp64_args", "") if "fp64_args" not in params else "").split(","),
        )
    )
    host_args = _typed_floats(params, host_args, fp64)
    kwargs = {k: _host_view(v, device) for k, v in constexprs.items()}
    grid = tuple(int(g) for g in grid)
    if not 1 <= len(grid) <= 3 or min(grid) < 0:
        raise ValueError(f"npu-sim launch: grid must have 1 to 3 non-negative axes, got {grid}")

    def run() -> None:
        if min(grid) > 0:
            with _compat.interpreting(kernel.fn), _interpreter_options(options):
                kernel[grid](*host_args, **kwargs)

    if ext()._is_current_stream_capturing():
        ext()._record_python(run, f"triton:{kernel.__name__}")
    else:
        global eager_launches
        eager_launches += 1
        run()
