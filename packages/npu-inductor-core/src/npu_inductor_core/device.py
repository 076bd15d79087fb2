"""Device facts for every component: one reader of the device "npu" properties.

A kernel's tiling depends on the unified buffer (UB) and the vector-core count of the SoC it
is compiled for. The compiling process records those facts in each kernel's inductor_meta
(``FACTS_KEY``, written by npu-lowering's kernel codegen), so a compile worker, which opens no
device, tiles for the real SoC: ``device_for(inductor_meta)`` prefers the recorded facts.

``ub_bytes`` is the UB the compiler can plan, not the hardware's size: for the 950 family
(SoC version >= 260) bishengir-compile-a5's HIVM target spec plans 2031616 bits (248 KiB) of
the 256 KiB torch_npu reports; 910B-class parts plan all of their 192 KiB.

The Cube's buffers (what GEMM candidates are pruned by) are the figures Ascend's compiler
itself plans with: ``bishengir-opt --hacc-append-device-spec=target=Ascend910B2`` (and
``bishengir-opt-a5 ... target=Ascend910_9599``, ascendnpu-ir 1.2.0) print the HIVM target
spec in bits: L1 4194304 (512 KiB), L0A and L0B 524288 (64 KiB) on both families, L0C
1048576 (128 KiB) on 910B and 2097152 (256 KiB) on 950. CANN's catlass
(include/acot/arch/arch.hpp, AtlasA2) gives the same 910B figures.
"""

from __future__ import annotations

import dataclasses
import functools

DEFAULT_UB = 192 * 1024
UB_950 = 248 * 1024
SOC_950 = 260  # torch_npu's SoC enum: 950-family parts from here on
DEFAULT_VECTOR_CORES = 48
DEFAULT_CUBE_CORES = 24
L1_BYTES = 512 * 1024  # both families
L0AB_BYTES = 64 * 1024  # L0A and L0B, both families
L0C_BYTES = {"910B": 128 * 1024, "950": 256 * 1024}
FACTS_KEY = "npu_device_facts"


@dataclasses.dataclass(frozen=True)
class Device:
    """The facts of one npu. The defaults are a 910B2's: what a process without a device
    (a compile worker) assumes when the kernel carries no recorded facts."""

    ub_bytes: int = DEFAULT_UB
    vector_cores: int = DEFAULT_VECTOR_CORES
    cube_cores: int = DEFAULT_CUBE_CORES
    soc: str = "Ascend910B2"
    soc_version: int | None = None
    flavour: str = "none"  # "sim" (npu-sim), "ascend" (torch_npu), "none" (no device here)
    l1_bytes: int = L1_BYTES
    l0a_bytes: int = L0AB_BYTES
    l0b_bytes: int = L0AB_BYTES
    l0c_bytes: int = L0C_BYTES["910B"]

    @property
    def family(self) -> str:
        return family(self.soc_version)

    def record(self) -> dict:
        """What a kernel's inductor_meta keeps under ``FACTS_KEY``: what its tiles, its UB
        calibration (by SoC) and its cost estimate (Cube cores, SoC family) depend on."""
        return {
            "ub_bytes": self.ub_bytes,
            "vector_cores": self.vector_cores,
            "cube_cores": self.cube_cores,
            "soc": self.soc,
            "soc_version": self.soc_version,
        }


def family(soc_version: int | None) -> str:
    """ "950" for the 950 family (SoC version >= 260), else "910B" (also without a device)."""
    return "950" if soc_version is not None and soc_version >= SOC_950 else "910B"


def plannable_ub(ub_size: int | None, soc_version: int | None) -> int:
    """The UB bytes the compiler plans on a part reporting ``ub_size`` (None: derive it from
    the SoC version, as torch_npu does)."""
    limit = UB_950 if family(soc_version) == "950" else DEFAULT_UB
    return min(int(ub_size), limit) if ub_size else limit


def index_of(triton_meta: dict) -> int:
    """The device index of a kernel's triton_meta: DeviceProperties at codegen, the bare index
    once upstream's autotuner has replaced it (before kernels compile and launch)."""
    dev = triton_meta.get("device")
    return dev if isinstance(dev, int) else getattr(dev, "index", 0) or 0


def device_for(inductor_meta: dict | None, index: int = 0) -> Device:
    """The facts the kernel was generated for, else those of device ``index`` here."""
    facts = (inductor_meta or {}).get(FACTS_KEY)
    if facts:
        soc_version = facts.get("soc_version")  # absent from kernels generated before it was kept
        return Device(
            int(facts["ub_bytes"]),
            int(facts["vector_cores"]),
            cube_cores=int(facts.get("cube_cores", DEFAULT_CUBE_CORES)),
            soc=str(facts.get("soc", Device.soc)),
            soc_version=None if soc_version is None else int(soc_version),
            l0c_bytes=L0C_BYTES[family(soc_version)],
        )
    return device(index)


def device(index: int = 0) -> Device:
    """The facts of npu ``index`` in this process (the 910B defaults while there is none; that
    answer is not cached, so a device started later is read then)."""
    try:
        return _read(index)
    except _NoDevice:
        return Device()


class _NoDevice(Exception):
    pass


@functools.cache
def _read(index: int) -> Device:
    import torch

    if torch._C._get_privateuse1_backend_name() != "npu" or not hasattr(torch, "npu"):
        raise _NoDevice
    try:
        props = torch.npu.get_device_properties(index)
    except Exception as exc:  # no npu in this process (a compile worker)
        raise _NoDevice from exc
    soc_version = getattr(props, "soc_version", None)
    if soc_version is None and hasattr(torch.npu, "get_soc_version"):
        try:
            soc_version = torch.npu.get_soc_version()
        except Exception:
            soc_version = None
    provider = getattr(torch.npu, "__name__", "").split(".")[0]
    return Device(
        ub_bytes=plannable_ub(getattr(props, "ub_size", None), soc_version),
        vector_cores=int(getattr(props, "vector_core_num", None) or DEFAULT_VECTOR_CORES),
        cube_cores=int(
            getattr(props, "cube_core_num", None)
            or getattr(props, "multi_processor_count", None)
            or DEFAULT_CUBE_CORES
        ),
        soc=str(getattr(props, "name", "") or "unknown"),
        soc_version=soc_version,
        flavour="sim" if provider == "npu_sim" else "ascend",
        l0c_bytes=L0C_BYTES[family(soc_version)],
    )
