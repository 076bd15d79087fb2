"""Which Triton the npu kernels of this process run on.

- "ascend": triton-ascend is installed (real NPU; its libdevice, compiled by its backend);
- "interpreter": device "npu" is npu-sim (kernels run in Triton's interpreter);
- "nvidia": NVIDIA Triton with a real GPU (our codegen benchmarked on cuda).
"""

from __future__ import annotations

import functools
from importlib import metadata


@functools.cache
def flavour() -> str:
    try:
        metadata.version("triton-ascend")
        return "ascend"
    except metadata.PackageNotFoundError:
        pass
    import torch

    npu = getattr(torch, "npu", None)
    if npu is not None and getattr(npu, "__name__", "").startswith("npu_sim"):
        return "interpreter"
    return "nvidia"
