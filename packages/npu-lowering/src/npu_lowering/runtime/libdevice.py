"""libdevice for generated npu kernels, per Triton flavour (an importable module, so a kernel
rebuilt from its source in another process finds it too).

On the simulator and on Ascend every function is portable Triton (libdevice_portable.py):
the interpreter has no libdevice, and triton-ascend 3.2's has stubs that assert (fmod,
div_rz) or swap arguments (atan2 calls math.atan2(arg1, arg0)), while the portable versions
lower through its front end (checked in CI). On NVIDIA, NVIDIA Triton's libdevice overrides.
"""

from .flavour import flavour as _flavour
from .libdevice_portable import *  # noqa: F401,F403

if _flavour() == "nvidia":
    from triton.language.extra.libdevice import *  # noqa: F401,F403
