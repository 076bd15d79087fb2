"""npu-launcher's settings: a torch config module (``install_config_module``).

    import npu_launcher.config as c
    with c.patch(cache_dir="/tmp/launcher"): ...

Defaults come from the ``NPU_LAUNCHER_*`` variables, read when this module is first imported;
keys are read when used. Nothing here changes generated code (not in the FX graph cache key).

``tensor_fast_path`` is read by ``_tensor_abi.calibrate()`` once per process when the launcher
loads (``import torch`` under autoload), before code could patch it, so in practice it is set
by ``NPU_LAUNCHER_TENSOR_FAST_PATH=0``; the native side keeps the result for the process.
"""

from typing import Optional

from npu_inductor_core import env_config as _env

# the sim driver's folder for kernel sources it rebuilds (a "sim" folder under it); None: ~/.cache/npu_launcher
cache_dir: Optional[str] = _env.text("NPU_LAUNCHER_CACHE_DIR")

# the native launcher reads torch tensors' data pointers and sizes directly (calibrated against
# this torch's layout at load); False: through torch's API (slower, for a layout it misreads)
tensor_fast_path: bool = _env.flag("NPU_LAUNCHER_TENSOR_FAST_PATH", True, internal=True)

_env.install(__name__)
