"""Differences between the Triton and torch versions npu-launcher runs with.

Supported: Triton 3.8 (CI, this package's tests), Triton 3.6 + torch 2.11 (the GPU machine),
triton-ascend 3.2 (Ascend), torch 2.13 (CI). Each function names the versions it is for.
Nothing here patches upstream (the benchmark's cuda route is bench/cuda_routes.py); it only reads.
(``has_triton``, which npu-launcher needs for user Triton kernels, is npu-inductor-core's one
patch.)
"""

from __future__ import annotations

import inspect
import re
import textwrap
from typing import Any, Mapping


def arg_index_map(src) -> dict[Any, int]:
    """ASTSource keys -> argument index. Triton >= 3.3 keys signature by name and constants
    and attrs by 1-tuples of indices; Triton 3.2 / triton-ascend 3.2 use names or plain ints."""
    names = list(src.fn.arg_names)
    out: dict[Any, int] = {}
    for i, n in enumerate(names):
        out[n] = i
        out[i] = i
        out[(i,)] = i
    return out


def signature_by_index(src) -> dict[int, str]:
    """{argument index: Triton type string}, for every Triton version above."""
    idx = arg_index_map(src)
    return {idx[k]: v for k, v in src.signature.items()}


def constants_by_index(src) -> dict[int, Any]:
    """{argument index: value} of constexprs and specialised constants (Triton 3.3+:
    ``src.constants`` keyed by 1-tuples; older: names or ints). Nested tuple args are refused
    earlier, so only top-level keys occur."""
    idx = arg_index_map(src)
    consts = getattr(src, "constants", None) or {}
    return {idx[k]: v for k, v in consts.items() if k in idx}


def divisibility_by_index(src) -> dict[int, int]:
    """{argument index: divisibility} the kernel was specialised for.

    Triton >= 3.3: ``src.attrs`` = {(i,): [["tt.divisibility", 16], ...]}.
    Triton 3.2 / triton-ascend 3.2: an AttrsDescriptor whose ``arg_properties`` maps
    "tt.divisibility" to a list of indices (always 16)."""
    attrs = getattr(src, "attrs", None)
    out: dict[int, int] = {}
    if attrs is None:
        return out
    idx = arg_index_map(src)
    if isinstance(attrs, Mapping):
        for key, props in attrs.items():
            for name, value in props:
                if name == "tt.divisibility" and key in idx:
                    out[idx[key]] = int(value)
        return out
    props = getattr(attrs, "arg_properties", None) or {}
    for i in props.get("tt.divisibility", ()):
        out[idx.get(i, i)] = 16
    return out


def metadata_value(metadata, key: str, default=None):
    """CompiledKernel.metadata is a namedtuple (Triton 3.x) or a dict (triton-ascend paths)."""
    if isinstance(metadata, Mapping):
        return metadata.get(key, default)
    return getattr(metadata, key, default)


def launch_metadata_schema(kernel) -> Mapping | None:
    """Triton's versioned launch metadata schema, where the Triton in use offers one.

    torch 2.13's Inductor reads ``CompiledKernel.launch_metadata_schema`` (Level 0: keys
    entry_name, num_warps, shared_mem) when ``torch._inductor.config.use_launch_metadata_schema``
    is on; Triton 3.6 and 3.8 have no such attribute, so they take the legacy path. torch 2.11
    has no flag: the schema is then used whenever present."""
    schema = getattr(kernel, "launch_metadata_schema", None)
    if schema is None:
        return None
    try:
        from torch._inductor import config as inductor_config
    except Exception:  # torch without Inductor: nothing to switch it off
        return schema
    if not getattr(inductor_config, "use_launch_metadata_schema", True):
        return None
    return schema


def kernel_source(fn) -> str:
    """Source of a @triton.jit function without decorators: ``JITFunction.src`` (Triton 3.x);
    an interpreter ``InterpretedFunction`` (TRITON_INTERPRET=1) only wraps the Python
    function, whose source is then read and stripped here."""
    src = getattr(fn, "src", None)
    if isinstance(src, str):
        return src
    py = getattr(fn, "fn", fn)
    text = textwrap.dedent(inspect.getsource(py))
    return text[re.search(r"^def\s+\w+\s*\(", text, re.MULTILINE).start() :]


def python_function(fn):
    """The plain Python function behind a JITFunction / InterpretedFunction / Autotuner."""
    while hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def declared_constexprs(fn) -> set[str]:
    """Names of the parameters a @triton.jit function declares ``tl.constexpr`` (the ones no
    launch passes). ``JITFunction.params`` (Triton 3.x, triton-ascend 3.2) where present; an
    interpreter ``InterpretedFunction`` (TRITON_INTERPRET=1) has no ``params``, so its Python
    function's annotations are read as Triton's ``KernelParam.is_constexpr`` reads them."""
    params = getattr(fn, "params", None)
    if params is not None:
        return {p.name for p in params if p.is_constexpr}
    out = set()
    for name, p in inspect.signature(python_function(fn)).parameters.items():
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            continue
        text = ann if isinstance(ann, str) else getattr(ann, "__name__", None) or repr(ann)
        if "constexpr" in text:
            out.add(name)
    return out


def tensor_base_type():
    """The C type every torch tensor instance is laid out as: ``torch._C.TensorBase``
    (torch >= 2.1; ``_TensorBase`` before)."""
    import torch

    return getattr(torch._C, "TensorBase", None) or torch._C._TensorBase
