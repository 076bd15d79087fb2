"""`libdevice` and `math` for generated npu kernels, resolved per Triton flavour.

Generated kernels import ``from npu_lowering.runtime.math import libdevice, math as tl_math``
instead of Inductor's triton_helpers names, so no npu kernel ever references
``tl.extra.cuda``: on Ascend the names come from triton-ascend's libdevice (portable Triton
for what it lacks), on the simulator from portable Triton (the interpreter has no
libdevice), on NVIDIA from NVIDIA Triton's libdevice.
"""

from __future__ import annotations

import types

import triton.language as tl

from . import libdevice_portable
from .flavour import flavour

math = tl.math


def _build() -> types.ModuleType:
    kind = flavour()
    ns = types.ModuleType(f"npu_lowering.runtime.libdevice[{kind}]")
    for name in dir(libdevice_portable):
        if not name.startswith("_"):
            setattr(ns, name, getattr(libdevice_portable, name))
    if kind == "ascend":
        from triton.language.extra.ascend import libdevice as native  # triton-ascend only
    elif kind == "nvidia":
        from triton.language.extra import libdevice as native
    else:
        return ns
    for name in dir(native):
        if not name.startswith("_"):
            setattr(ns, name, getattr(native, name))
    return ns


libdevice = _build()
