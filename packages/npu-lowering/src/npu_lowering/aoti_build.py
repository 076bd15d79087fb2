"""The AOTInductor build of an npu graph: upstream's ``AotCodeCompiler`` precompiles the AOT
header of the graph's device (``aot_inductor.precompile_headers``, on by default) by including
``<torch/csrc/inductor/aoti_include/<device>.h>`` with torch's include directories only, and
torch ships no ``npu.h`` there.

Around each npu graph compiled for AOTInductor (npu-inductor-core's ``compile_hooks``, per
graph) the compiler's include path gets a folder holding that name (gcc/clang's ``CPATH``,
added to while the graph compiles, restored after): its ``npu.h`` includes npu's AOT header
(``cpp_wrapper.header_path(aot=True)``), so upstream precompiles npu's header as it does
cuda's, and the flag keeps its meaning. Other compiles never include that name. No upstream
symbol is replaced.

Around ``compile_fx`` for an npu program compiled for AOTInductor (``compile_context``):
upstream's AOT default of ``triton.autotune_at_compile_time`` (None: on for AOT where
``has_triton()``) is made explicit, on: every kernel's descriptor is recorded at
that compile-time run (``runtime/aot_params.py``). Upstream reads ``has_triton`` through the
name ``compile_fx`` bound at its import, which answers for npu only when npu-inductor-core's
patch came first; the answer for an npu graph must not depend on import order. A value the
user set is kept.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading

from npu_inductor_core import env_config as _env

_lock = threading.Lock()


def include_root() -> str:
    """A folder with ``torch/csrc/inductor/aoti_include/npu.h`` including npu's AOT header."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    from .cpp_wrapper import header_path

    text = f'#pragma once\n#include "{header_path(aot=True)}"\n'
    root = os.path.join(
        cache_dir(), "npu_aoti_include", hashlib.sha256(text.encode()).hexdigest()[:16]
    )
    path = os.path.join(root, "torch", "csrc", "inductor", "aoti_include", "npu.h")
    if not os.path.exists(path):
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    return root


@contextlib.contextmanager
def _include_path(root: str):
    with _lock:
        old = _env.text("CPATH")
    with _env.overlay({"CPATH": root if not old else f"{old}{os.pathsep}{root}"}):
        yield


def graph_context(gm, example_inputs):
    """Per graph (``compile_hooks.around_compile_graph``): npu's AOT header on the include path
    while an npu graph compiles for AOTInductor; None otherwise."""
    from npu_inductor_core.compile_hooks import graph_on_npu
    from torch._inductor.virtualized import V

    if not V.aot_compilation:
        return None
    return _include_path(include_root()) if graph_on_npu(gm, example_inputs) else None


def compile_context(model, example_inputs):
    """Around ``compile_fx`` (``compile_hooks.around_compile_fx``), before upstream resolves
    its cpp-wrapper config: an npu program compiled for AOTInductor runs its kernels at compile
    time unless the user said otherwise; None for every other compile."""
    import torch
    from torch._inductor import config
    from torch._inductor.utils import get_all_devices
    from torch._inductor.virtualized import V

    if not V.aot_compilation or config.triton.autotune_at_compile_time is not None:
        return None
    on_npu = any(
        isinstance(t, torch.Tensor) and t.device.type == "npu" for t in example_inputs or ()
    )
    if not on_npu and isinstance(model, torch.fx.GraphModule):
        try:
            on_npu = any(d.type == "npu" for d in get_all_devices(model))
        except Exception:
            on_npu = False
    return config.patch({"triton.autotune_at_compile_time": True}) if on_npu else None
