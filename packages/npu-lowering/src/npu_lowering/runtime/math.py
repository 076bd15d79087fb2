"""`libdevice` and `math` for generated npu kernels, resolved per Triton flavour.

Generated kernels import ``from npu_lowering.runtime.math import libdevice, math as tl_math``
instead of Inductor's triton_helpers names, so no npu kernel ever references
``tl.extra.cuda``. On the simulator and on Ascend the functions are portable Triton
(libdevice_portable.py): the interpreter has no libdevice, and triton-ascend 3.2's libdevice
has stubs that assert (fmod, div_rz) or swap arguments (atan2 calls math.atan2(arg1, arg0)),
while the portable versions lower through its front end (checked in CI). On NVIDIA, NVIDIA
Triton's libdevice overrides them.
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
    if kind != "nvidia":
        return ns
    from triton.language.extra import libdevice as native
    for name in dir(native):
        if not name.startswith("_"):
            setattr(ns, name, getattr(native, name))
    return ns


libdevice = _build()
