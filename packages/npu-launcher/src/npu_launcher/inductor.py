"""Inductor's npu kernels as descriptors and launch objects (entry points in group
``npu_inductor.kernel_launcher``, used by npu-lowering's kernel object).

- ``describe_triton(fn, triton_meta, config_kwargs, simulated=True)`` -> KernelDescriptor of
  one kernel configuration: runtime arguments are the kernel's non-constexpr parameters in
  order, constexprs are Inductor's constants plus the config's block sizes, and the
  ``tt.divisibility`` hints become per-argument alignment checks. On npu-sim the descriptor
  carries the kernel's Python source (the sim driver interprets it); native npu binaries come
  from ``descriptor_from_compiled`` on triton-ascend's CompiledKernel instead.
- ``bind_triton(fn, triton_meta, config_kwargs, device, simulated=True, descriptor=None)`` ->
  launch object; with ``descriptor`` (a KernelDescriptor or its bytes, e.g. restored from the
  FX graph cache) nothing is read from ``fn``, which may then be a function whose Python body
  was dropped for pickling.
- ``native_launcher(result, descriptor, device, arg_names, declared_constexprs)`` -> the
  upstream-shaped launcher of a triton-ascend kernel (npu-lowering's kernel object on Ascend).
- ``bind_descriptor(descriptor, device)``, ``descriptor_to_bytes``, ``descriptor_from_bytes``:
  the small public API other components (npu-cache's kernel-binary cache) use.
"""

from __future__ import annotations

from typing import Any, Mapping

from . import _compat
from .descriptor import KernelDescriptor
from .errors import UnsupportedKernel
from .from_triton import sim_descriptor
from .launcher import bind


def _divisibility(triton_meta: Mapping, names: list[str]) -> dict[str, int]:
    """Inductor's attrs ({(index,): [["tt.divisibility", 16]]}) by argument name."""
    out: dict[str, int] = {}
    for attrs in triton_meta.get("configs", ()) or ():
        if not isinstance(attrs, Mapping):
            continue
        for key, values in attrs.items():
            index = key[0] if isinstance(key, tuple) and len(key) == 1 else None
            if index is None or index >= len(names):
                continue
            for name, value in values:
                if name == "tt.divisibility":
                    out[names[index]] = int(value)
    return out


def describe_triton(
    fn: Any, triton_meta: Mapping, config_kwargs: Mapping[str, Any], simulated: bool = True
) -> KernelDescriptor:
    if not simulated:
        raise UnsupportedKernel(
            f"kernel {getattr(fn, '__name__', fn)!r}: a native npu kernel is "
            "described from its CompiledKernel (descriptor_from_compiled)"
        )
    signature = dict(triton_meta["signature"])
    names = list(signature)
    constants = dict(triton_meta.get("constants") or {})
    # The call (Inductor's run, the wrapper's direct-launch slots) passes the signature's
    # parameters the kernel does not declare tl.constexpr, in order (upstream's
    # _interpret_args_grid). Of those, the ones Inductor made constants (a size equal to 1:
    # equal_1_arg_indices; a user kernel's None), typed "constexpr", are specialized: passed,
    # checked, and the interpreter gets them like any argument. (Declared constexprs come from
    # the function itself: an InterpretedFunction, TRITON_INTERPRET=1, has no ``params``.)
    declared = _compat.declared_constexprs(fn)
    runtime, specialized = {}, {}
    for n in names:
        if n in declared:
            continue
        if signature[n] == "constexpr" or n in constants:
            specialized[n] = constants.get(n)
        else:
            runtime[n] = signature[n]
    constexprs = {**constants, **dict(config_kwargs)}
    return sim_descriptor(
        fn,
        runtime,
        constexprs,
        divisibility=_divisibility(triton_meta, names),
        specialized=specialized,
    )


def bind_triton(
    fn: Any,
    triton_meta: Mapping,
    config_kwargs: Mapping[str, Any],
    device: int = 0,
    simulated: bool = True,
    descriptor=None,
):
    if descriptor is None:
        descriptor = describe_triton(fn, triton_meta, config_kwargs, simulated)
    return bind(descriptor, device)


def bind_descriptor(descriptor, device: int | None = None):
    """A KernelDescriptor or its bytes -> launch object (DescriptorError when they are bad)."""
    return bind(descriptor, device)


def descriptor_to_bytes(descriptor: KernelDescriptor) -> bytes:
    return descriptor.to_bytes()


def descriptor_from_bytes(data: bytes) -> KernelDescriptor:
    return KernelDescriptor.from_bytes(data)


# ---- cuda: Inductor's own cuda kernels through npu-launcher (benchmarks only) ----------------
# (Not the npu path: there npu-lowering's kernel object binds descriptors.) bench/cuda_routes.py
# routes a cuda kernel that upstream would launch with Triton's launcher to ``cuda_launcher``;
# nothing in this package installs that route, so loading the backend never changes cuda compiles.


def cuda_launcher(result):
    """An upstream-shaped launcher (``launcher(*def_args, stream)``: grid from the config, then
    the runner) whose runner is an npu-launcher cuda launch object. ``result`` is Inductor's
    TritonCompileResult of a cuda kernel; None for a kernel the launcher refuses."""
    from .from_triton import descriptor_from_compiled

    binary = result.kernel
    try:
        desc = descriptor_from_compiled(binary)
    except UnsupportedKernel:
        return None  # upstream's launcher then
    device = result.compile_meta.get("device", 0) or 0
    fn = binary.src.fn
    launcher = upstream_shaped_launcher(
        result, desc, bind(desc, device), fn.arg_names, [p.num for p in fn.params if p.is_constexpr]
    )
    init = getattr(binary, "_init_handles", None)
    if callable(init):
        init()  # Triton fills n_regs / n_spills when it loads the module (upstream's launcher does too)
    launcher.n_regs = getattr(binary, "n_regs", None)
    launcher.n_spills = getattr(binary, "n_spills", None)
    return launcher


def native_launcher(result, descriptor, device: int, arg_names, declared_constexprs):
    """Entry point ``native_launcher``: the upstream-shaped launcher of a compiled npu kernel
    (triton-ascend's npubin, described by ``descriptor_from_compiled``), used by npu-lowering's
    kernel object on Ascend. ``result`` is the kernel's CompileResult (its launcher code
    generator); ``arg_names`` / ``declared_constexprs`` are the Triton function's parameter
    names and the indices of its ``tl.constexpr`` ones, which decide what Inductor's call
    passes. Binding raises DriverUnavailable (no CANN runtime), DescriptorError (another
    schema, target or SoC) or LaunchFailed; the caller decides between falling back and
    raising (strict_static_triton_launcher)."""
    desc = (
        descriptor
        if isinstance(descriptor, KernelDescriptor)
        else KernelDescriptor.from_bytes(descriptor)
    )
    if desc.target.backend != "npu":
        raise UnsupportedKernel(
            f"kernel {desc.name!r} targets {desc.target.backend!r}, not a native npu binary"
        )
    launcher = upstream_shaped_launcher(
        result, desc, bind(desc, device), arg_names, declared_constexprs
    )
    # an npubin has no registers to report and nothing spills (the unified buffer's fit is
    # checked at compile); upstream's fusion benchmarks compare n_spills with a number
    launcher.n_regs = launcher.n_spills = 0
    return launcher


def upstream_shaped_launcher(
    result, desc: KernelDescriptor, launch, arg_names, declared_constexprs
):
    """Inductor's generated launcher code around ``launch``: the grid comes from the config
    as upstream computes it, the runtime arguments are the descriptor's, in its order; the
    launcher also carries the direct-launch probe npu-lowering's wrapper slots ask."""
    _, def_args, _ = result._get_arg_lists(list(arg_names), list(declared_constexprs))
    # The runner takes the call's arguments, specialized ones in place (the launch object
    # drops and checks them), so the direct-launch probe returns the wrapper's own arguments.
    # One the launcher code does not take (a user kernel's None dropped by Inductor) is
    # passed as the constant it was compiled with.
    fixed = {s.name: repr(s.value) for s in desc.specialized if s.name not in def_args}
    runner_args = [
        "grid_0",
        "grid_1",
        "grid_2",
        "stream",
        *[fixed.get(n, n) for n in desc.call_arg_names()],
    ]
    launcher = result._gen_launcher_code({"runner": launch}, def_args, runner_args)
    launcher.npu_direct_launch = _direct_probe(result, def_args, runner_args, launch)
    launcher.config = result.config
    launcher.shared = desc.shared
    launcher.cache_hash = None
    # upstream's run saves the binary of a launcher with store_cubin (C++ wrappers, AOTInductor:
    # npu-lowering's save_gpu_kernel saves the descriptor); its own static launcher refuses
    # store_cubin, ours launches the descriptor it saves
    launcher.store_cubin = bool(
        (getattr(result, "inductor_meta", None) or {}).get("store_cubin", False)
    )
    return launcher


def _direct_probe(result, def_args, runner_args, launch):
    """The direct-launch probe npu-lowering's wrapper slots ask (``npu_direct_launch(args,
    stream)`` -> launch object, grid, runtime args): the same generated launcher code with a
    runner that records what it would launch, so grid and argument order are upstream's own."""
    recorded = []
    probe = result._gen_launcher_code(
        {"runner": lambda *a: recorded.append(a)}, def_args, runner_args
    )

    def npu_direct_launch(args, stream):
        recorded.clear()
        probe(*args, stream=stream)
        gx, gy, gz, _stream, *runtime_args = recorded[0]
        return launch, (gx, gy, gz), tuple(runtime_args)

    return npu_direct_launch
