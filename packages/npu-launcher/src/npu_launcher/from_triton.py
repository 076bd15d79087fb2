"""Kernel descriptors from Triton: a CompiledKernel (cuda cubin or triton-ascend npubin), or a
@triton.jit function for npu-sim (whose "binary" is the kernel's Python source).

The launch fields (entry name, num_warps, shared memory) come from Triton's versioned launch
metadata schema where the Triton in use offers one (``CompiledKernel.launch_metadata_schema``,
honouring ``torch._inductor.config.use_launch_metadata_schema``), else from the legacy
``CompiledKernel.metadata``. Either way the result records which in
``metadata_source``.
"""

from __future__ import annotations

import importlib
import types
from typing import Any, Mapping

from . import _compat
from .descriptor import ArgSpec, GridRule, KernelDescriptor, SpecializedArg, Target
from .errors import UnsupportedKernel


def runtime_args(src) -> tuple[tuple[ArgSpec, ...], dict[str, Any], tuple[SpecializedArg, ...]]:
    """(runtime arguments, constexprs, specialized) of an ASTSource-like object. A launch
    passes every parameter the function does not declare ``tl.constexpr`` (Triton's launcher
    and Inductor's launcher code alike); of those, the ones the compile made constants
    (Triton's equal-to-1 / None specialization, Inductor's ``constants``) are specialized:
    in the call, not in the binary."""
    names = list(src.fn.arg_names)
    sig = _compat.signature_by_index(src)
    consts = _compat.constants_by_index(src)
    div = _compat.divisibility_by_index(src)
    declared = _compat.declared_constexprs(src.fn)
    args, constexprs, specialized = [], {}, []
    for i, name in enumerate(names):
        if names[i] in declared:
            constexprs[name] = _plain(consts.get(i))
            continue
        if i not in sig and i not in consts:
            continue  # not in this compile's signature (Triton 3.2 style): not passed
        ty = sig.get(i, "constexpr")
        if not isinstance(ty, str):
            raise UnsupportedKernel(
                f"argument {name!r} is a tuple ({ty!r}); tuples are not "
                "supported by the static launcher"
            )
        position = len(args) + len(specialized)
        if ty == "constexpr" or i in consts:
            specialized.append(specialized_arg(position, name, consts.get(i)))
            continue
        if ty.startswith("tensordesc") or ty == "nvTmaDesc":
            raise UnsupportedKernel(
                f"argument {name!r} is a tensor descriptor ({ty}); "
                "not supported by the static launcher"
            )
        args.append(ArgSpec(name, ty, div.get(i, 1)))
    return tuple(args), constexprs, tuple(specialized)


def specialized_arg(position: int, name: str, value) -> SpecializedArg:
    """A specialized call argument; its value is checked at launch when it is a plain number
    (the ints equal to 1 Triton and Inductor specialize), only dropped otherwise, as Triton's
    launcher drops it: a None's place in Inductor's call holds a dummy (-1), and a value
    that is no plain number (a dtype) is recorded by name only."""
    plain = _plain(value)
    checked = type(plain) in (bool, int, float) and plain == getattr(value, "value", value)
    return SpecializedArg(position, name, plain, checked)


def _plain(value):
    """tl.constexpr wrappers -> their value; dtypes -> their name."""
    value = getattr(value, "value", value)
    if value is not None and not isinstance(value, (bool, int, float, str)):
        return str(value)
    return value


def launch_fields(kernel) -> dict:
    """entry name, num_warps, shared and their source (schema or legacy metadata)."""
    md = kernel.metadata
    schema = _compat.launch_metadata_schema(kernel)
    if schema is not None:
        return {
            "name": schema["entry_name"],
            "num_warps": int(schema["num_warps"]),
            "shared": int(schema["shared_mem"]),
            "metadata_source": f"schema:{schema.get('version', 0)}",
        }
    return {
        "name": _compat.metadata_value(md, "name"),
        "num_warps": int(_compat.metadata_value(md, "num_warps", 1)),
        "shared": int(getattr(kernel, "shared", None) or _compat.metadata_value(md, "shared", 0)),
        "metadata_source": "legacy",
    }


def descriptor_from_compiled(kernel, *, grid: GridRule | tuple | None = None) -> KernelDescriptor:
    """Descriptor of a Triton ``CompiledKernel`` for cuda (cubin) or Ascend (npubin)."""
    md = kernel.metadata
    target = _compat.metadata_value(md, "target")
    backend = getattr(target, "backend", None) or target["backend"]
    arch = getattr(target, "arch", None) if not isinstance(target, Mapping) else target["arch"]
    warp = (
        getattr(target, "warp_size", 0)
        if not isinstance(target, Mapping)
        else target.get("warp_size", 0)
    )
    fields = launch_fields(kernel)
    args, constexprs, specialized = runtime_args(kernel.src)
    num_ctas = int(_compat.metadata_value(md, "num_ctas", 1) or 1)
    for flag in ("launch_cooperative_grid", "launch_pdl"):
        if _compat.metadata_value(md, flag, False):
            raise UnsupportedKernel(f"kernel {fields['name']!r} needs {flag}; not supported")
    if num_ctas != 1:
        raise UnsupportedKernel(
            f"kernel {fields['name']!r} uses num_ctas={num_ctas}; the static launcher supports 1"
        )
    if _compat.metadata_value(md, "tensordesc_meta", None):
        raise UnsupportedKernel(f"kernel {fields['name']!r} uses tensor descriptors")
    extra: dict = {}
    trailing = 0
    if backend == "cuda":
        binary = kernel.asm["cubin"]
        # Triton >= 3.3 appends a global-scratch pointer, >= 3.5 a profile-scratch pointer
        for what in ("global_scratch_size", "profile_scratch_size"):
            size = _compat.metadata_value(md, what, None)
            if size is None:
                continue
            if size > 0:
                raise UnsupportedKernel(
                    f"kernel {fields['name']!r} needs {what}={size}; "
                    "scratch memory is not supported by the static launcher"
                )
            trailing += 1
    elif backend == "npu":
        binary = kernel.asm["npubin"]
        fields["name"], extra = ascend_launch(md, fields["name"], str(arch))
    else:
        raise UnsupportedKernel(f"no npu-launcher driver for Triton backend {backend!r}")
    if grid is not None and not isinstance(grid, GridRule):
        grid = GridRule(tuple(grid))
    return KernelDescriptor(
        name=fields["name"],
        target=Target(backend, str(arch), int(warp or 0)),
        binary_format="cubin" if backend == "cuda" else "npubin",
        binary=bytes(binary),
        args=args,
        constexprs=constexprs,
        grid=grid,
        shared=fields["shared"],
        num_warps=fields["num_warps"],
        num_ctas=num_ctas,
        trailing_null_params=trailing,
        extra=extra,
        metadata_source=fields["metadata_source"],
        specialized=specialized,
    )


def ascend_launch(md, name: str, arch: str) -> tuple[str, dict]:
    """(entry name, descriptor extras) from triton-ascend's launch metadata (a CompiledKernel's
    metadata, or the dict its ``_parse_linalg_metadata`` fills): triton-ascend names the
    entry "<kernel_name> <mix_mode>". UnsupportedKernel for what the launcher cannot launch."""
    entry, _, mix = name.partition(" ")
    return entry, _ascend_extra(md, mix or "aiv", arch)


def _ascend_extra(md, mix_mode: str, arch: str) -> dict:
    """The fields triton-ascend 3.2's launcher reads from metadata (generate_npu_wrapper_src)."""
    workspace = int(_compat.metadata_value(md, "workspace_size", -1) or -1)
    locks = int(_compat.metadata_value(md, "lock_num", -1) or -1)
    if workspace > 0 or locks > 0:
        raise UnsupportedKernel(
            f"kernel needs workspace_size={workspace} / lock_num={locks}; "
            "workspace and sync-block locks are not supported yet"
        )
    simt = bool(_compat.metadata_value(md, "force_simt_only", False))
    parallel = str(_compat.metadata_value(md, "parallel_mode", "") or "")
    if "simt" in parallel or simt:
        raise UnsupportedKernel("SIMT kernels (rtKernelLaunchWithFlagV2) are not supported yet")
    return {
        "mix_mode": mix_mode,
        # is_ffts_supported(): every SoC but Ascend910A / Ascend310B4 takes the C2C address
        "ffts": arch not in ("Ascend910A", "Ascend310B4"),
        "simt_only": simt,
    }


def sim_descriptor(
    fn,
    signature: Mapping[str, str],
    constexprs: Mapping[str, Any] | None = None,
    *,
    divisibility: Mapping[str, int] | None = None,
    grid=None,
    device_type: str = "npu",
    arch: str = "",
    specialized: Mapping[str, Any] | None = None,
) -> KernelDescriptor:
    """Descriptor for npu-sim: the binary is a self-contained Python module defining the
    kernel (its source plus the globals it uses), so a new process rebuilds it without the
    original file. ``signature`` lists runtime arguments ({name: "*fp32"}); ``specialized``
    ({name: value}) the call's arguments compiled as constants (passed by the call, checked
    at launch, then handed to the interpreter like the rest); every other parameter of ``fn``
    must be in ``constexprs``. The call passes the parameters in ``signature`` and
    ``specialized``, in the function's order."""
    py = _compat.python_function(fn)
    params = list(py.__code__.co_varnames[: py.__code__.co_argcount])
    constexprs = dict(constexprs or {})
    specialized = dict(specialized or {})
    divisibility = dict(divisibility or {})
    missing = [
        p for p in params if p not in signature and p not in constexprs and p not in specialized
    ]
    if missing:
        raise UnsupportedKernel(
            f"kernel {py.__name__!r}: parameters {missing} are neither in the "
            "signature nor constexprs"
        )
    call = [p for p in params if p in signature or p in specialized]
    args = tuple(
        ArgSpec(n, signature[n], int(divisibility.get(n, 1))) for n in call if n not in specialized
    )
    special = tuple(
        specialized_arg(i, n, specialized[n]) for i, n in enumerate(call) if n in specialized
    )
    if grid is not None and not isinstance(grid, GridRule):
        grid = GridRule(tuple(grid))
    return KernelDescriptor(
        name=py.__name__,
        target=Target("sim", arch, 0, device_type),
        binary_format="triton-python",
        binary=module_source(fn).encode(),
        args=args,
        constexprs={k: _plain(v) for k, v in constexprs.items() if k not in call},
        grid=grid,
        metadata_source="sim",
        specialized=special,
    )


def module_source(fn) -> str:
    """A module that defines ``fn`` (decorated with triton.jit) and what it references:
    imported modules by name, helper @triton.jit functions (recursively), and plain
    constants / tl.constexpr globals."""
    lines = ["import triton", "import triton.language as tl", ""]
    defs: list[str] = []
    seen: set[str] = set()

    def visit(f):
        py = _compat.python_function(f)
        if py.__name__ in seen:
            return
        seen.add(py.__name__)
        g = py.__globals__
        for name in _referenced_names(py.__code__):
            if name in seen or name not in g or name in ("triton", "tl"):
                continue
            v = g[name]
            if isinstance(v, types.ModuleType):
                lines.append(
                    f"import {v.__name__} as {name}" if v.__name__ != name else f"import {name}"
                )
            elif (
                hasattr(v, "fn")
                and callable(getattr(v, "run", None))
                or type(v).__name__ in ("JITFunction", "InterpretedFunction")
            ):
                visit(v)
            elif type(v).__name__ == "constexpr":
                lines.append(f"{name} = tl.constexpr({_plain(v)!r})")
            elif isinstance(v, (bool, int, float, str)):
                lines.append(f"{name} = {v!r}")
            elif getattr(v, "__module__", None) and hasattr(v, "__name__"):
                mod = importlib.import_module(v.__module__)
                if getattr(mod, v.__name__, None) is v:
                    lines.append(f"from {v.__module__} import {v.__name__} as {name}")
        defs.append("@triton.jit\n" + _compat.kernel_source(f))

    visit(fn)
    return "\n".join(lines) + "\n\n\n" + "\n\n".join(defs)


def _referenced_names(code) -> list[str]:
    names = list(code.co_names)
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            names += _referenced_names(c)
    return list(dict.fromkeys(names))
