"""bind(): a kernel descriptor -> a pre-bound native launch object.

    launch = bind(descriptor, device=0)
    launch(grid_x, grid_y, grid_z, stream, *kernel_args)   # one vectorcall, no parsing

``kernel_args`` are the call's: the binary's arguments with, in place, those Triton
specialized into constants (``descriptor.specialized``), which the launch drops (and checks).

The driver follows the descriptor's target (cuda -> "cuda", npu -> "ascend", sim -> "sim").
Everything that can be decided once (argument kinds, dtype codes, alignment, the driver's
function handle) is decided here; the call only validates and launches.
"""

from __future__ import annotations

from . import _native, _tensor_abi, errors
from .descriptor import KernelDescriptor

DRIVERS = {"cuda": "cuda", "npu": "ascend", "sim": "sim"}
KINDS = {name: i for i, name in enumerate(_native.ARG_KINDS)}

_native.set_error_types(
    errors.KernelArgumentError,
    errors.KernelArgumentTypeError,
    errors.LaunchFailed,
    errors.DriverUnavailable,
    errors.DescriptorError,
)


def arg_table(desc: KernelDescriptor) -> list[tuple]:
    """The per-argument rows the native launcher takes:
    (kind, align, dtype code, torch dtype, name, Triton type)."""
    rows = []
    for a in desc.args:
        if a.is_pointer:
            dt, code = _tensor_abi.dtype_for(a.type[1:])
            rows.append((KINDS["*"], a.align, code, dt, a.name, a.type))
        else:
            rows.append((KINDS[a.type], a.align, -1, None, a.name, a.type))
    return rows


def specialized_table(desc: KernelDescriptor) -> list[tuple]:
    """(call position, name, value, checked, exact) of each argument the call passes but the
    binary does not take; the native side decides at bind which call position feeds which
    argument. ``exact``: the value is the constant itself (None, a bool, int or float), not a
    name recorded for it (a dtype's), so the sim driver can hand it to the interpreter."""
    return [
        (
            s.index,
            s.name,
            s.value,
            bool(s.checked),
            s.value is None or type(s.value) in (bool, int, float),
        )
        for s in desc.specialized
    ]


def bind(desc, device: int | None = None, *, driver: str | None = None):
    """Load ``desc`` (a KernelDescriptor or its bytes) on ``device`` and return its launch
    object. Raises DescriptorError for a descriptor of another schema or target,
    DriverUnavailable when the driver's runtime is missing, LaunchFailed if loading fails."""
    if isinstance(desc, (bytes, bytearray, memoryview)):
        desc = KernelDescriptor.from_bytes(desc)
    want = DRIVERS.get(desc.target.backend)
    if want is None:
        raise errors.DescriptorError(
            f"kernel {desc.name!r}: no driver for target {desc.target.backend!r}"
        )
    if driver is not None and driver != want:
        raise errors.DescriptorError(
            f"kernel {desc.name!r} targets {desc.target.backend!r} "
            f"({want} driver), not the {driver} driver"
        )
    _tensor_abi.calibrate()
    rows = arg_table(desc)
    special = specialized_table(desc)
    dev_type = desc.target.device_type
    code = _tensor_abi.DEVICE_TYPE_CODES.get(dev_type, 20)
    if want == "cuda":
        index = _current_cuda_device() if device is None else int(device)
        if not desc.target.arch.isdigit():
            raise errors.DescriptorError(
                f"kernel {desc.name!r}: cuda arch {desc.target.arch!r} is not a compute capability"
            )
        launch, _regs, _spills = _native.bind_cuda(
            desc.name,
            rows,
            code,
            index,
            f"cuda:{index}",
            dev_type,
            desc.binary,
            desc.num_warps,
            desc.shared,
            int(desc.target.arch),
            desc.trailing_null_params,
            special,
        )
        return launch
    if want == "ascend":
        index = 0 if device is None else int(device)
        extra = desc.extra
        return _native.bind_ascend(
            desc.name,
            rows,
            code,
            index,
            f"npu:{index}",
            dev_type,
            desc.binary,
            str(extra.get("mix_mode", "aiv")),
            bool(extra.get("ffts", True)),
            bool(extra.get("simt_only", False)),
            desc.target.arch,
            special,
        )
    from . import sim

    entry = sim.launch_entry()
    fn = sim.kernel_function(desc)
    index = -1 if device is None else int(device)
    label = dev_type if index < 0 else f"{dev_type}:{index}"
    return _native.bind_sim(
        desc.name, rows, code, index, label, dev_type, entry, fn, dict(desc.constexprs), special
    )


def _current_cuda_device() -> int:
    import torch

    return torch.cuda.current_device() if torch.cuda.is_available() else 0


def driver_status(driver: str) -> tuple[bool, str]:
    """(available, why not) for "cuda" or "ascend", without binding a kernel."""
    return tuple(_native.driver_status(driver))
