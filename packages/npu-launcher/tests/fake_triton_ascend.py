"""Test stand-ins for Ascend without an NPU (imported by the route tests' child processes).

- ``compile_as_on_ascend()``: the whole process set up as on Ascend (below, and flavour "ascend").
- ``install_compile()``: ``triton.compile`` for target backend "npu" becomes a
  triton-ascend-shaped compile: npu-sim's Triton backend compiles the kernel (AST -> TTIR,
  the source of truth for signature and constants), and the result carries what
  triton-ascend 3.2's compiler leaves on a CompiledKernel (``_parse_linalg_metadata``:
  name "<kernel_name> <mix_mode>", mix_mode, parallel_mode, kernel_name, shared=1,
  tensor_kinds; the target GPUTarget("npu", <SoC>, 0); ``asm["npubin"]``). The defaults
  (mix_mode "aiv", "mix" for kernels with tl.dot, parallel_mode "simd") are what
  triton-ascend derives for the kernels npu-lowering generates (npu-lowering's test_ascend_validity checks that on the real
  front end's output). Everything else
  (its ``run``, used by Triton's own launcher when ours falls back) is npu-sim's, so a
  fallback really runs the kernel.
- ``fake_cann_library(dir)``: builds fake_cann.c (CANN's runtime calls, logged) with the
  system C compiler; point NPU_LAUNCHER_CANN_LIBS at it.
- ``read_log(path)``: the logged calls as tuples.
"""

from __future__ import annotations

import collections
import os
import shutil
import subprocess
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOC = "Ascend910B3"
NPUBIN_MAGIC = b"\x7fELF-fake-npubin:"
COMPILES: list[str] = []  # kernel names compiled for "npu", in order


class AscendShapedKernel:
    def __init__(self, sim, soc: str, mix_mode: str, parallel_mode: str = "simd"):
        from triton.backends.compiler import GPUTarget

        self._sim = sim
        md = sim.metadata._asdict()
        name = md["name"]
        md.update(
            target=GPUTarget("npu", soc, 0),
            name=f"{name} {mix_mode}",
            mix_mode=mix_mode,
            parallel_mode=parallel_mode,
            kernel_name=name,
            shared=1,
            tensor_kinds=[],
            required_ub_bits=0,
        )
        self.metadata = collections.namedtuple("KernelMetadata", md)(**md)
        self.asm = {**sim.asm, "npubin": NPUBIN_MAGIC + name.encode()}
        self.src, self.hash, self.name = sim.src, sim.hash, sim.name

    def __getattr__(self, attr):
        return getattr(self._sim, attr)


def compile_as_on_ascend(soc: str = SOC, **shape) -> None:
    """This process compiles as where triton-ascend is installed: every npu-inductor component
    enabled, kernels generated and C++ wrapper headers written for flavour "ascend", compiles
    through ``install_compile`` (in this process: one compile thread)."""
    import torch

    import npu_inductor
    import npu_lowering.kernel
    import npu_lowering.runtime.flavour

    npu_inductor.enable()
    npu_lowering.kernel.flavour = npu_lowering.runtime.flavour.flavour = lambda: "ascend"
    install_compile(soc, **shape)
    torch._inductor.config.compile_threads = 1


def install_compile(soc: str = SOC, **shape) -> None:
    import triton
    from triton.backends.compiler import GPUTarget

    real = triton.compile

    def compile(src, target=None, options=None, **kwargs):
        if target is None or target.backend != "npu":
            return real(src, target=target, options=options, **kwargs)
        sim = real(src, target=GPUTarget("npu_sim", "interpreter", 1), options=options, **kwargs)
        COMPILES.append(sim.name)
        # triton-ascend runs kernels with cube ops (tl.dot: GEMM templates) as "mix"
        # (cube + vector cores), the rest on vector cores ("aiv")
        mix = "mix" if "tl.dot(" in src.fn.src else "aiv"
        return AscendShapedKernel(sim, soc, mix, **shape)

    triton.compile = compile


def fake_cann_library(directory: Path) -> Path:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise RuntimeError("no C compiler to build the fake CANN runtime")
    out = Path(directory) / "libfake_cann.so"
    subprocess.run(
        [cc, "-shared", "-fPIC", "-O1", "-o", str(out), str(HERE / "fake_cann" / "fake_cann.c")],
        check=True,
        capture_output=True,
        text=True,
    )
    return out


def read_log(path) -> list[tuple[str, ...]]:
    p = Path(path)
    return [tuple(line.split(" ")) for line in p.read_text().splitlines()] if p.exists() else []
