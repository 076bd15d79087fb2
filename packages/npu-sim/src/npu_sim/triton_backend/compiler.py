"""The npu-sim compiler: a target Inductor can hash and key caches by. For a @triton.jit
kernel launched eagerly, triton.compile runs Triton's own front end (Python AST -> TTIR) and
stops there: the TTIR is the "binary" (kept in Triton's cache), and the driver's launcher
runs the Python function in Triton's interpreter, as npu kernels from Inductor run."""

from __future__ import annotations

import dataclasses
import hashlib
import re

from triton.backends.compiler import BaseBackend, GPUTarget

BACKEND = "npu_sim"


@dataclasses.dataclass(frozen=True)
class SimOptions:
    num_warps: int = 1
    # Triton 3.9's CompiledKernel reads the warp size from the kernel's metadata (the options),
    # no longer from the driver's target: for its thread-limit check and when it loads a kernel for
    # its own launcher; one "thread" per program, as the target says
    warp_size: int = 1
    num_ctas: int = 1
    num_stages: int = 1
    debug: bool = False
    sanitize_overflow: bool = False
    arch: str = "interpreter"
    backend_name: str = BACKEND
    supported_fp8_dtypes: tuple = ()
    deprecated_fp8_dot_operand_dtypes: tuple = ()
    default_dot_input_precision: str = "ieee"
    allowed_dot_input_precisions: tuple = ("ieee",)
    max_num_imprecise_acc_default: int = 0
    extern_libs: tuple = ()
    launch_cooperative_grid: bool = False
    enable_fp_fusion: bool = True
    # Triton's JITFunction.run passes these knobs.compilation settings to every launch and
    # rejects options the backend does not know (KeyError); like Triton's own backends' options,
    # ours declares each with the default that leaves it off (3.8: instrumentation_mode; 3.9
    # adds fpsan_homomorphic_casts, the floating-point sanitizer's mode, meaningless here)
    instrumentation_mode: str = ""
    fpsan_homomorphic_casts: bool = False

    def hash(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()


class SimBackend(BaseBackend):
    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        # torch 2.14+ also asks for a target named after the device (GPUTarget("npu", ...), from
        # the device properties) to filter a user kernel's launch options (wrapper codegen's
        # try_filter_backend_options_for_target); our driver's own target is "npu_sim"
        return target.backend in (BACKEND, "npu")

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        self.binary_ext = "ttir"

    def hash(self) -> str:
        from .. import __name__ as pkg  # noqa: F401  (the hash names the simulator and its arch)

        return f"{BACKEND}-{self.target.arch}"

    def parse_options(self, options: dict) -> SimOptions:
        known = {f.name for f in dataclasses.fields(SimOptions)}
        given = {k: v for k, v in options.items() if k in known and v is not None}
        return SimOptions(**{"warp_size": self.target.warp_size, **given})

    def add_stages(self, stages: dict, options: object, language=None) -> None:
        stages["ttir"] = _finish_ttir

    def load_dialects(self, context) -> None:
        pass

    def get_module_map(self) -> dict:
        return {}

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def get_codegen_implementation(self, options) -> dict:
        return {"min_dot_size": lambda lhs_type, rhs_type: (1, 1, 1)}


def _finish_ttir(module, metadata: dict):
    """The only stage: names the kernel (as real backends do from their last IR) and uses no
    shared memory; nothing is lowered further, the interpreter runs the Python function."""
    names = re.findall(r"tt\.func public @([A-Za-z_][A-Za-z0-9_]*)", str(module))
    if not names:
        raise RuntimeError("npu-sim: no public kernel function in the TTIR")
    metadata["name"] = names[0]
    metadata["shared"] = 0
    return module
