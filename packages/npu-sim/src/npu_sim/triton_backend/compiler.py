"""The npu-sim compiler: a target Inductor can hash and key caches by; no compile stages."""

from __future__ import annotations

import dataclasses
import hashlib

from triton.backends.compiler import BaseBackend, GPUTarget

BACKEND = "npu_sim"


@dataclasses.dataclass(frozen=True)
class SimOptions:
    num_warps: int = 1
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

    def hash(self) -> str:
        return hashlib.sha256(repr(self).encode()).hexdigest()


class SimBackend(BaseBackend):
    @staticmethod
    def supports_target(target: GPUTarget) -> bool:
        return target.backend == BACKEND

    def __init__(self, target: GPUTarget) -> None:
        super().__init__(target)
        self.binary_ext = "py"

    def hash(self) -> str:
        from .. import __name__ as pkg  # noqa: F401  (the hash names the simulator and its arch)

        return f"{BACKEND}-{self.target.arch}"

    def parse_options(self, options: dict) -> SimOptions:
        known = {f.name for f in dataclasses.fields(SimOptions)}
        return SimOptions(**{k: v for k, v in options.items() if k in known and v is not None})

    def add_stages(self, stages: dict, options: object, language=None) -> None:
        raise RuntimeError("npu-sim compiles nothing: npu kernels run in Triton's interpreter (npu_sim.launch)")

    def load_dialects(self, context) -> None:
        pass

    def get_module_map(self) -> dict:
        return {}

    def pack_metadata(self, metadata):
        return (metadata.num_warps, metadata.num_ctas, metadata.shared)

    def get_codegen_implementation(self, options) -> dict:
        return {"min_dot_size": lambda lhs_type, rhs_type: (1, 1, 1)}
