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
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading

_lock = threading.Lock()


def include_root() -> str:
    """A folder with ``torch/csrc/inductor/aoti_include/npu.h`` including npu's AOT header."""
    from torch._inductor.runtime.cache_dir_utils import cache_dir

    from .cpp_wrapper import header_path

    text = f'#pragma once\n#include "{header_path(aot=True)}"\n'
    root = os.path.join(cache_dir(), "npu_aoti_include", hashlib.sha256(text.encode()).hexdigest()[:16])
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
        old = os.environ.get("CPATH")
        os.environ["CPATH"] = root if not old else f"{old}{os.pathsep}{root}"
    try:
        yield
    finally:
        with _lock:
            if old is None:
                os.environ.pop("CPATH", None)
            else:
                os.environ["CPATH"] = old


def graph_context(gm, example_inputs):
    """Per graph (``compile_hooks.around_compile_graph``): npu's AOT header on the include path
    while an npu graph compiles for AOTInductor; None otherwise."""
    from torch._inductor.utils import get_all_devices
    from torch._inductor.virtualized import V

    if not V.aot_compilation:
        return None
    try:
        on_npu = any(d.type == "npu" for d in get_all_devices(gm))
    except Exception:
        on_npu = False
    on_npu = on_npu or any(getattr(t, "device", None) is not None and t.device.type == "npu"
                           for t in example_inputs or ())
    return _include_path(include_root()) if on_npu else None
