"""`libdevice` and `math` for generated npu kernels.

Generated kernels import ``from npu_lowering.runtime.math import libdevice, math as tl_math``
instead of Inductor's triton_helpers names, so no npu kernel ever references
``tl.extra.cuda`` (libdevice.py says which implementation each flavour gets).
"""

import triton.language as tl

from . import libdevice  # noqa: F401  (re-exported for generated kernels)

math = tl.math
