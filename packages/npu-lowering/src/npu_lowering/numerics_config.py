"""npu-lowering's numerics settings that upstream Inductor of the running torch lacks.

``strict_signed_zero`` (catalogue N18) is an Inductor config from torch 2.14; on an older
torch this module holds it for npu kernels (``numerics.strict_signed_zero`` reads Inductor's
when it exists, else this one). Environment: ``TORCHINDUCTOR_STRICT_SIGNED_ZERO=1``.
"""

from __future__ import annotations

import os

#: Generated npu kernels keep the sign of zero as eager does: ``-x`` flips the sign bit of a
#: zero, and ``maximum``/``minimum`` order -0.0 below +0.0 (IEEE 754-2019).
strict_signed_zero: bool = os.environ.get("TORCHINDUCTOR_STRICT_SIGNED_ZERO", "0") == "1"
