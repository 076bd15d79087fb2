"""Compiles npu-sim's C++ device: every ``src/npu_sim/csrc/*.cpp`` into ``npu_sim._C``.

torch.utils.cpp_extension's ``BuildExtension`` does the compiling (torch's headers, flags and
ABI; ninja, parallel and incremental), against the torch this Python imports. Beside the
extension goes ``_C_build.json``, the build record ``npu_sim._build`` checks at start: the
torch it was built against and the sources it compiled.

``pip install`` runs it through hatch_build.py. After editing C++ in a checkout with an
editable install, rebuild in place, recompiling only what changed (README "Build"):

    .venv/bin/python packages/npu-sim/build_device.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CSRC = HERE / "src" / "npu_sim" / "csrc"
RECORD = "_C_build.json"


def series(version: str) -> str:
    """'2.13.0+cpu' -> '2.13': the torch releases one build serves (the C++ ABI changes between them)."""
    return ".".join(version.split("+")[0].split(".")[:2])


def in_place_dir(version: str) -> Path:
    """Where a source checkout's (editable install's) build for torch ``version`` goes: one folder
    per torch series under ``src/npu_sim/_built/``, so venvs of different torch releases can share
    one checkout (``npu_sim._build`` loads the one of the running torch)."""
    return HERE / "src" / "npu_sim" / "_built" / f"torch{series(version)}"


def build(out_dir: Path) -> list[Path]:
    """Build into ``out_dir/npu_sim/``; returns the extension and its build record."""
    import torch
    from setuptools import Distribution
    from torch.utils.cpp_extension import BuildExtension, CppExtension

    sources = sorted(CSRC.glob("*.cpp"))
    if not sources:
        raise SystemExit(f"npu-sim: no C++ sources in {CSRC}")
    # no -std: torch's BuildExtension adds the standard its headers need (C++17 for torch 2.13,
    # C++20 from torch 2.14 on: ATen.h refuses anything older there)
    ext = CppExtension("npu_sim._C", [str(s) for s in sources], depends=[str(h) for h in CSRC.glob("*.h")],
                       extra_compile_args=["-O2", "-g0"])  # -g0: as the JIT build was (Python adds -g)
    dist = Distribution({"name": "npu-sim", "ext_modules": [ext], "cmdclass": {"build_ext": BuildExtension}})
    cmd = dist.get_command_obj("build_ext")  # torch's build_ext: its flags and ABI, ninja
    cmd.build_lib = str(out_dir)
    # kept between builds (git-ignored), one folder per torch: a rebuild recompiles what changed
    cmd.build_temp = str(HERE / "build" / f"temp-torch{torch.__version__}")
    cmd.ensure_finalized()
    cmd.run()
    extension = Path(cmd.get_ext_fullpath(ext.name))
    record = extension.with_name(RECORD)
    record.write_text(json.dumps({"torch": torch.__version__, "sources": [s.name for s in sources]}, indent=1) + "\n",
                      encoding="utf-8")
    return [extension, record]


if __name__ == "__main__":
    if len(sys.argv) > 1:
        raise SystemExit(__doc__)
    import torch

    for path in build(in_place_dir(torch.__version__)):  # in place, for the editable install's torch
        print(path)
