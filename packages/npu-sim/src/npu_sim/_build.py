"""Builds the C++ device (csrc/) at first import and caches the build.

Built with torch.utils.cpp_extension against the torch in this environment, so installing
npu-sim never pulls another torch into a build-isolation environment. The build is cached
under $TORCH_EXTENSIONS_DIR (default ~/.cache/torch_extensions), one folder per torch
installation; cpp_extension rebuilds
what changed when the sources change, and concurrent first imports wait on its file lock.
"""

from __future__ import annotations

import hashlib
import os
import sys
import time
from pathlib import Path

CSRC = Path(__file__).parent / "csrc"
SOURCES = sorted(CSRC.glob("*.cpp"))


def load():
    from torch.utils import cpp_extension

    import torch

    name = "npu_sim_C"  # cpp_extension rebuilds (incrementally) when sources change
    # one build per torch installation: two environments never rebuild each other's
    env_key = hashlib.sha256(f"{torch.__file__}|{torch.__version__}".encode()).hexdigest()[:10]
    build_dir = Path(cpp_extension._get_build_directory(f"{name}_{env_key}", verbose=False))
    fresh = not any(build_dir.glob("*.so"))
    if fresh:
        print(f"npu-sim: building the simulated device (first import, cached in {build_dir}) ...",
              file=sys.stderr, flush=True)
    start = time.monotonic()
    module = cpp_extension.load(
        name=name,
        sources=[str(s) for s in SOURCES],
        extra_cflags=["-O2", "-std=c++17"],
        build_directory=str(build_dir),
        verbose=os.environ.get("NPU_SIM_VERBOSE_BUILD") == "1",
    )
    if fresh:
        print(f"npu-sim: built in {time.monotonic() - start:.0f} s", file=sys.stderr, flush=True)
    return module
