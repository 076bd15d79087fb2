"""npu-lowering's settings: a torch config module (``install_config_module``).

    import npu_lowering.config as c
    with c.patch(small_gemm_templates=False): ...

Defaults come from the ``NPU_LOWERING_*`` variables, read when this module is first imported
(``npu_inductor_core.env_config``). ``register()`` passes this module to Inductor as npu's
``device_custom_config``, so every key (``save_kernels`` excepted: it changes no code) is
part of the FX graph cache key: a compile under other settings never reuses stale code.
Code reads the keys where they are used, so ``patch()`` applies to the next compile.
"""

import sys
from typing import Optional

from npu_inductor_core import env_config as _env
from torch.utils._config_module import install_config_module

# nodes of a dtype npu kernels do not take: "fallback" (lower to ATen) or "error" (raise UnsupportedDtype)
dtype_policy: str = _env.text("NPU_LOWERING_DTYPE_POLICY", "fallback")

# float64 on npu: "fp64" (never narrowed: float64 nodes stay ATen ops) or "fp32" (opt-in: npu
# kernels compute float64 values in float32, with a one-time warning naming each kernel)
fp64_compute: str = _env.text("NPU_LOWERING_FP64_COMPUTE", "fp64")

# small static GEMMs lower to a one-tile Triton template in default mode; False: ATen, as upstream
small_gemm_templates: bool = _env.flag(
    "NPU_LOWERING_SMALL_GEMM_TEMPLATES",
    True,
    false=("0", "false", "False"),
    true=("1", "true", "True"),
)

# a cap (M*N*K multiply-adds, batch included) on the GEMMs small_gemm_templates may take; None:
# the Ascend cost model alone decides, per GEMM (template vs aclnn's GEMM, small_gemm.py)
small_gemm_max_macs: Optional[int] = None

# a persistent reduction takes a read of a row it already holds from that row (``tl.gather``,
# row_reuse.py); False: every read from GM, as upstream
row_reuse: bool = True

# a folder: every generated npu kernel's source is also written there (for ascend_check); not in the cache key
save_kernels: Optional[str] = _env.text("NPU_LOWERING_SAVE_KERNELS", internal=True)

# torch 2.14's Inductor flag, held here for an older torch (numerics.strict_signed_zero reads
# Inductor's where it exists): generated npu kernels keep the sign of zero as eager does
# (``-x`` flips the sign bit of a zero; maximum/minimum order -0.0 below +0.0, IEEE 754-2019).
# Its variable is upstream's.
strict_signed_zero: bool = _env.flag("TORCHINDUCTOR_STRICT_SIGNED_ZERO", False)

# keys left out of the FX graph cache key (torch's save_config_portable honours this prefix list)
_cache_config_ignore_prefix: list = ["save_kernels"]

install_config_module(sys.modules[__name__])
