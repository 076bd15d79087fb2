"""npu_launcher: serializable kernel descriptors and a nanobind native launcher.

    desc = descriptor_from_compiled(compiled_kernel)      # or sim_descriptor(fn, ...)
    blob = desc.to_bytes(); desc = KernelDescriptor.from_bytes(blob)
    launch = bind(desc, device=0)
    launch(grid_x, grid_y, grid_z, stream, *args)

See this package's README for drivers, configuration and status.
"""

from .descriptor import SCHEMA_VERSION, ArgSpec, GridRule, KernelDescriptor, SpecializedArg, Target
from .errors import (
    DescriptorError,
    DriverUnavailable,
    KernelArgumentError,
    KernelArgumentTypeError,
    LauncherError,
    LaunchFailed,
    UnsupportedKernel,
)

__all__ = [
    "SCHEMA_VERSION",
    "ArgSpec",
    "GridRule",
    "KernelDescriptor",
    "SpecializedArg",
    "Target",
    "bind",
    "descriptor_from_compiled",
    "sim_descriptor",
    "register",
    "DescriptorError",
    "DriverUnavailable",
    "KernelArgumentError",
    "KernelArgumentTypeError",
    "LauncherError",
    "LaunchFailed",
    "UnsupportedKernel",
]

_registered = False


def bind(desc, device=None, *, driver=None):
    from .launcher import bind as _bind

    return _bind(desc, device, driver=driver)


def descriptor_from_compiled(kernel, *, grid=None):
    from .from_triton import descriptor_from_compiled as _f

    return _f(kernel, grid=grid)


def sim_descriptor(fn, signature, constexprs=None, **kw):
    from .from_triton import sim_descriptor as _f

    return _f(fn, signature, constexprs, **kw)


def register() -> None:
    """Component hook of the ``npu_inductor.components`` entry-point group. Idempotent.

    Loads the native launcher and calibrates its tensor fast path, so a broken build fails
    here, named, rather than at the first launch, and lets Dynamo put user Triton kernels on
    npu into graphs (npu-inductor-core's ``triton_device``: one ``has_triton`` patch). npu-lowering's kernel object finds
    the launcher through the ``npu_inductor.kernel_launcher`` entry points."""
    global _registered
    if _registered:
        return
    from npu_inductor_core.triton_device import count_npu_as_triton_device

    from . import _tensor_abi, launcher  # noqa: F401  (imports _native, sets error types)

    _tensor_abi.calibrate()
    count_npu_as_triton_device()
    _registered = True
