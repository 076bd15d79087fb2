"""Device properties of the Ascend part npu-sim pretends to be.

Chosen by $NPU_SIM_SOC (default Ascend910B2); the device count by $NPU_SIM_DEVICE_COUNT
(default 1), of which $ASCEND_RT_VISIBLE_DEVICES (torch_npu's CUDA_VISIBLE_DEVICES, honoured by
CANN's runtime) leaves only the listed ones visible, renumbered from 0. Core counts and unified-buffer sizes follow torch_npu's own rules: 910B-class
parts have 48 vector / 24 cube cores (40 / 20 on B3/B4) and a 192 KiB UB; Ascend 950
(SoC version >= 260) has a 256 KiB UB. `soc_version` is torch_npu's SoC enum value.
"""

from __future__ import annotations

from dataclasses import dataclass

from npu_inductor_core import env_config as _env

# The SoC and device count are npu_sim.config keys read when the device starts (``import
# torch`` under autoload): child processes (compile and tuning workers) must start as the
# same device, which only the environment carries to them. The config module is imported
# when first read: it imports torch, which ``import npu_sim`` must not do first (autoload
# would import npu_sim again, half-initialized).
SOC_ENV = "NPU_SIM_SOC"
COUNT_ENV = "NPU_SIM_DEVICE_COUNT"
VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30


@dataclass(frozen=True)
class Soc:
    name: str
    soc_version: int
    vector_core_num: int
    cube_core_num: int
    ub_size: int
    L2_cache_size: int
    total_memory: int


SOCS = {
    s.name: s
    for s in (
        Soc("Ascend910B1", 220, 48, 24, 192 * KiB, 192 * MiB, 64 * GiB),
        Soc("Ascend910B2", 221, 48, 24, 192 * KiB, 192 * MiB, 64 * GiB),
        Soc("Ascend910B3", 222, 40, 20, 192 * KiB, 192 * MiB, 64 * GiB),
        Soc("Ascend910B4", 223, 40, 20, 192 * KiB, 96 * MiB, 32 * GiB),
        Soc("Ascend950", 260, 64, 32, 256 * KiB, 128 * MiB, 128 * GiB),
    )
}
DEFAULT = "Ascend910B2"


def selected() -> Soc:
    from . import config

    name = config.soc
    if name not in SOCS:
        raise ValueError(
            f"${SOC_ENV}={name!r} is not a known SoC; choose one of {', '.join(sorted(SOCS))}"
        )
    return SOCS[name]


def device_count() -> int:
    """Devices this process sees (tuning workers get one each through $ASCEND_RT_VISIBLE_DEVICES)."""
    return len(visible_devices())


def visible_devices() -> list[int]:
    """Simulated device ids visible to this process, in the order that numbers them."""
    count = physical_device_count()
    raw = _env.text(VISIBLE_ENV)
    if raw is None or not raw.strip():
        return list(range(count))
    try:
        ids = [int(part) for part in raw.split(",")]
    except ValueError:
        ids = []
    if not ids or len(set(ids)) != len(ids) or not all(0 <= i < count for i in ids):
        raise ValueError(
            f"${VISIBLE_ENV}={raw!r}: expected distinct device ids from 0 to {count - 1}, "
            f"comma-separated (${COUNT_ENV}={count})"
        )
    return ids


def physical_device_count() -> int:
    from . import config

    raw = count = config.device_count
    if not isinstance(count, int) or isinstance(count, bool):
        count = 0
    if not 1 <= count <= 16:
        raise ValueError(f"${COUNT_ENV}={raw!r}: expected an integer from 1 to 16")
    return count


class NPUDeviceProperties:
    """What torch.npu.get_device_properties() returns (torch_npu's attribute names, plus
    ub_size, which torch_npu derives from the SoC version)."""

    def __init__(self, soc: Soc):
        self.name = soc.name
        self.soc_version = soc.soc_version
        self.vector_core_num = soc.vector_core_num
        self.cube_core_num = soc.cube_core_num
        self.ub_size = soc.ub_size
        self.L2_cache_size = soc.L2_cache_size
        self.total_memory = soc.total_memory
        self.multi_processor_count = soc.vector_core_num  # what Inductor's DeviceProperties reads
        self.major, self.minor = 0, 0

    def __repr__(self) -> str:
        return (
            f"_NPUDeviceProperties(name='{self.name}', total_memory={self.total_memory // MiB}MB, "
            f"cube_core_num={self.cube_core_num}, vector_core_num={self.vector_core_num}, "
            f"L2_cache_size={self.L2_cache_size // MiB}MB, ub_size={self.ub_size // KiB}KB)"
        )
